// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title Price feed (test)
/// @notice Stands in on the local chain for a Chainlink price feed (AggregatorV3Interface), with the semantics of
///         Chainlink's MockV3Aggregator: `updateAnswer` starts a new round at the block's time, `updateRoundData`
///         writes any round as given (a past `updatedAt` makes the feed stale, a future one makes it wrong), and
///         the reads are the ones the service makes of a real feed. Never deployed to a real network.
/// @dev Written from the aggregator's public interface, not from Chainlink's code. Unlike Chainlink's mock, only
///      the deployer may write, like the other local contracts (a real feed is written by its oracle network only).
contract TestPriceFeed {
    uint256 public constant version = 0;

    /// @notice The deployer; the only account allowed to change the answer.
    address public immutable owner;

    uint8 public decimals;
    string public description;
    int256 public latestAnswer;
    uint256 public latestTimestamp;
    uint256 public latestRound;

    mapping(uint256 round => int256) public getAnswer;
    mapping(uint256 round => uint256) public getTimestamp;
    mapping(uint256 round => uint256) private getStartedAt;

    error OwnableUnauthorizedAccount(address account);

    modifier onlyOwner() {
        if (msg.sender != owner) revert OwnableUnauthorizedAccount(msg.sender);
        _;
    }

    constructor(uint8 _decimals, int256 _initialAnswer, string memory _description) {
        owner = msg.sender;
        decimals = _decimals;
        description = _description;
        updateAnswer(_initialAnswer);
    }

    function updateAnswer(int256 _answer) public onlyOwner {
        latestAnswer = _answer;
        latestTimestamp = block.timestamp;
        latestRound++;
        getAnswer[latestRound] = _answer;
        getTimestamp[latestRound] = block.timestamp;
        getStartedAt[latestRound] = block.timestamp;
    }

    function updateRoundData(uint80 _roundId, int256 _answer, uint256 _timestamp, uint256 _startedAt)
        external
        onlyOwner
    {
        latestRound = _roundId;
        latestAnswer = _answer;
        latestTimestamp = _timestamp;
        getAnswer[latestRound] = _answer;
        getTimestamp[latestRound] = _timestamp;
        getStartedAt[latestRound] = _startedAt;
    }

    function getRoundData(uint80 _roundId)
        external
        view
        returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
    {
        return (_roundId, getAnswer[_roundId], getStartedAt[_roundId], getTimestamp[_roundId], _roundId);
    }

    function latestRoundData()
        external
        view
        returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
    {
        return (
            uint80(latestRound),
            getAnswer[latestRound],
            getStartedAt[latestRound],
            getTimestamp[latestRound],
            uint80(latestRound)
        );
    }
}
