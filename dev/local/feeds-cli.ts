import { getAddress, type Address } from 'viem';
import { repoRoot } from './infra/temporal-binaries';
import { FRESH_CHAIN_CONTRACTS, readLocalChainRecord } from './local-contracts';
import {
  describeFeed,
  feedStatus,
  feedUnits,
  makeFeedStale,
  refreshFeed,
  setFeedAnswer,
  setFeedRound,
} from './price-feed-admin';
import { stackSettings } from './stack-settings';

// `npm run local:feeds -- <action> [feed] [value]`: moves the local stack's price feeds by hand, as
// Chainlink's oracle network would on Arbitrum One (or as it would fail to), then prints what the
// api now reads. The api quotes from them in treasury mode (QUOTE_SOURCE=price-feeds). Local chain
// only: it signs with the anvil deployer's public key.
//
//   status                       both feeds' answers and ages
//   set <feed> <answer>          a new round now, e.g. `set brl-usd 0.19`
//   stale <feed> [seconds]       the same answer, last updated that long ago (default 2 days)
//   future <feed> [seconds]      the same answer, updated that far ahead (default 1 hour)
//   refresh [feed]               the same answer again, now (both feeds without a name)

const FEEDS = { 'brl-usd': 'brlUsdFeedAddress', 'usdt-usd': 'usdtUsdFeedAddress' } as const;
type Feed = keyof typeof FEEDS;
const USAGE =
  'usage: npm run local:feeds -- status | set <feed> <answer> | stale <feed> [seconds] | future <feed> [seconds] | refresh [feed]' +
  ` (feed: ${Object.keys(FEEDS).join(' or ')})`;

async function main(): Promise<void> {
  const [action, feedArg, value] = process.argv.slice(2);
  const settings = stackSettings(repoRoot());
  const rpcUrl = process.env.EVM_RPC_URL || `http://127.0.0.1:${settings.anvilPort}`;
  // npm start's record of its chain; without one (docker compose's chain) the fresh-chain addresses.
  const recorded = { ...FRESH_CHAIN_CONTRACTS, ...readLocalChainRecord(settings.dataDir) };
  const addressOf: Record<Feed, Address> = {
    'brl-usd': getAddress(process.env.PRICE_FEED_BRL_USD_ADDRESS || recorded.brlUsdFeedAddress),
    'usdt-usd': getAddress(process.env.PRICE_FEED_USDT_USD_ADDRESS || recorded.usdtUsdFeedAddress),
  };
  const named = feedArg === undefined ? undefined : feedArg in FEEDS ? (feedArg as Feed) : null;
  if (named === null) throw new Error(USAGE);
  const needFeed = (): Address => {
    if (!named) throw new Error(USAGE);
    return addressOf[named];
  };
  const seconds = (fallback: number) => {
    const n = value === undefined ? fallback : Number(value);
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(USAGE);
    return n;
  };

  switch (action) {
    case 'status':
      break;
    case 'set': {
      const feed = needFeed();
      if (!value || !/^\d+(\.\d+)?$/.test(value)) throw new Error(USAGE);
      await setFeedAnswer(rpcUrl, feed, feedUnits(value, (await feedStatus(rpcUrl, feed)).decimals));
      break;
    }
    case 'stale':
      await makeFeedStale(rpcUrl, needFeed(), seconds(2 * 24 * 3600));
      break;
    case 'future': {
      const feed = needFeed();
      const { answer } = await feedStatus(rpcUrl, feed);
      const updatedAt = BigInt(Math.floor(Date.now() / 1000) + seconds(3600));
      await setFeedRound(rpcUrl, feed, { answer, updatedAt });
      break;
    }
    case 'refresh':
      for (const feed of named ? [named] : (Object.keys(FEEDS) as Feed[]))
        await refreshFeed(rpcUrl, addressOf[feed]);
      break;
    default:
      throw new Error(USAGE);
  }
  for (const feed of Object.keys(FEEDS) as Feed[]) {
    const line = describeFeed(feed, addressOf[feed], await feedStatus(rpcUrl, addressOf[feed]));
    process.stdout.write(`${line}\n`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
