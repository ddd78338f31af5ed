// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title Tether USD (test)
/// @notice Minimal 6-decimal ERC-20 that stands in for USDT on the local chain (tests, demos, `npm start`).
///         It is never deployed to a real network: production uses the real USDT contract.
///         Like USDT0 on Arbitrum One it has an issuer blocklist: a blocked wallet cannot send (neither
///         as holder nor as spender) but can still receive, and the owner can burn what it holds.
/// @dev Written from scratch on purpose (no OpenZeppelin, no copied bytecode) so the repository carries
///      everything it needs to build the local chain offline. Errors follow ERC-6093 names so tools decode them;
///      the blocklist reverts with strings, as the real token does, so a test sees the same kind of failure.
contract TestUSDT {
    string public constant name = "Tether USD (test)";
    string public constant symbol = "USDT";
    uint8 public constant decimals = 6;

    /// @notice The deployer; the only account allowed to mint and to keep the blocklist.
    address public immutable owner;

    uint256 public totalSupply;
    mapping(address account => uint256) public balanceOf;
    mapping(address holder => mapping(address spender => uint256)) public allowance;
    mapping(address account => bool) public isBlocked;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);
    event BlockPlaced(address indexed account);
    event BlockReleased(address indexed account);
    event DestroyedBlockedFunds(address indexed account, uint256 amount);

    error OwnableUnauthorizedAccount(address account);
    error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed);
    error ERC20InsufficientAllowance(address spender, uint256 allowance, uint256 needed);
    error ERC20InvalidReceiver(address receiver);

    modifier onlyOwner() {
        if (msg.sender != owner) revert OwnableUnauthorizedAccount(msg.sender);
        _;
    }

    constructor() {
        owner = msg.sender;
    }

    function mint(address to, uint256 amount) external onlyOwner {
        if (to == address(0)) revert ERC20InvalidReceiver(to);
        totalSupply += amount;
        // Cannot overflow: no balance exceeds totalSupply, which the checked add above bounds.
        unchecked {
            balanceOf[to] += amount;
        }
        emit Transfer(address(0), to, amount);
    }

    /// @dev Only senders are checked, never the receiver: funds sent to a blocked wallet arrive, and stay frozen.
    function transfer(address to, uint256 amount) external returns (bool) {
        require(!isBlocked[msg.sender], "TestUSDT: from is blocked");
        _transfer(msg.sender, to, amount);
        return true;
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        require(!isBlocked[from], "TestUSDT: from is blocked");
        require(!isBlocked[msg.sender], "TestUSDT: spender is blocked");
        uint256 allowed = allowance[from][msg.sender];
        // An allowance of type(uint256).max means "unlimited", as in most ERC-20s.
        if (allowed != type(uint256).max) {
            if (allowed < amount) revert ERC20InsufficientAllowance(msg.sender, allowed, amount);
            unchecked {
                allowance[from][msg.sender] = allowed - amount;
            }
        }
        _transfer(from, to, amount);
        return true;
    }

    function addToBlockedList(address account) external onlyOwner {
        isBlocked[account] = true;
        emit BlockPlaced(account);
    }

    function removeFromBlockedList(address account) external onlyOwner {
        isBlocked[account] = false;
        emit BlockReleased(account);
    }

    /// @notice Burns a blocked wallet's whole balance; an unblocked wallet's funds are never the owner's to burn.
    function destroyBlockedFunds(address account) external onlyOwner {
        require(isBlocked[account], "TestUSDT: account is not blocked");
        uint256 amount = balanceOf[account];
        balanceOf[account] = 0;
        // Cannot underflow: no balance exceeds totalSupply.
        unchecked {
            totalSupply -= amount;
        }
        emit DestroyedBlockedFunds(account, amount);
        emit Transfer(account, address(0), amount);
    }

    function _transfer(address from, address to, uint256 amount) private {
        if (to == address(0)) revert ERC20InvalidReceiver(to);
        uint256 balance = balanceOf[from];
        if (balance < amount) revert ERC20InsufficientBalance(from, balance, amount);
        unchecked {
            balanceOf[from] = balance - amount;
            // Cannot overflow: the sum of all balances is totalSupply.
            balanceOf[to] += amount;
        }
        emit Transfer(from, to, amount);
    }
}
