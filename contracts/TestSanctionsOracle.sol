// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title Sanctions oracle (test)
/// @notice Stands in on the local chain for the sanctions oracle Chainalysis publishes on Arbitrum One: the same
///         `isSanctioned(address)` read and the same owner methods to change the list, so the service screens a
///         local receiver exactly as it would a real one. Never deployed to a real network.
/// @dev Written from the oracle's public interface, not from its code; errors follow the TestUSDT style.
contract TestSanctionsOracle {
    /// @notice The deployer; the only account allowed to change the list.
    address public immutable owner;

    mapping(address account => bool) private sanctioned;

    event SanctionedAddressesAdded(address[] addrs);
    event SanctionedAddressesRemoved(address[] addrs);

    error OwnableUnauthorizedAccount(address account);

    modifier onlyOwner() {
        if (msg.sender != owner) revert OwnableUnauthorizedAccount(msg.sender);
        _;
    }

    constructor() {
        owner = msg.sender;
    }

    function isSanctioned(address addr) external view returns (bool) {
        return sanctioned[addr];
    }

    function addToSanctionsList(address[] calldata newSanctions) external onlyOwner {
        for (uint256 i = 0; i < newSanctions.length; i++) sanctioned[newSanctions[i]] = true;
        emit SanctionedAddressesAdded(newSanctions);
    }

    function removeFromSanctionsList(address[] calldata removeSanctions) external onlyOwner {
        for (uint256 i = 0; i < removeSanctions.length; i++) sanctioned[removeSanctions[i]] = false;
        emit SanctionedAddressesRemoved(removeSanctions);
    }
}
