// What a test needs to move a stack's price feeds (contracts/TestPriceFeed.sol), signed by the
// local owner: a new answer, a round at any time (stale, future, zero), the latest answer again now.
// The functions live beside the local chain's setup, where `npm run local:feeds` uses them too; a
// chain's `brlUsdFeedAddress` and `usdtUsdFeedAddress` name the feeds.
export {
  feedStatus,
  makeFeedStale,
  refreshFeed,
  setFeedAnswer,
  setFeedRound,
} from '../../dev/local/price-feed-admin';
