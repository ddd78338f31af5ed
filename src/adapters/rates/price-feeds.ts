import { createPublicClient, http, type Address, type PublicClient } from 'viem';
import { rateFromUsdPrices } from '../../domain/money';
import { RateUnavailableError, type RateRefusal } from '../../domain/rate';
import { isMissingFunction, shortError } from '../chain/contract-errors';
import { cachedQuote, type QuoteSource, type SourcedRate } from './cached-quote';

/** The two reads the service makes of a Chainlink feed (AggregatorV3Interface). */
export const AGGREGATOR_V3_ABI = [
  {
    type: 'function',
    name: 'decimals',
    stateMutability: 'view',
    inputs: [],
    outputs: [{ name: '', type: 'uint8' }],
  },
  {
    type: 'function',
    name: 'latestRoundData',
    stateMutability: 'view',
    inputs: [],
    outputs: [
      { name: 'roundId', type: 'uint80' },
      { name: 'answer', type: 'int256' },
      { name: 'startedAt', type: 'uint256' },
      { name: 'updatedAt', type: 'uint256' },
      { name: 'answeredInRound', type: 'uint80' },
    ],
  },
] as const;

export type FeedName = 'brl_usd' | 'usdt_usd';

/** The setting that names each feed, for messages an operator acts on. */
export const FEED_SETTING: Record<FeedName, string> = {
  brl_usd: 'PRICE_FEED_BRL_USD_ADDRESS',
  usdt_usd: 'PRICE_FEED_USDT_USD_ADDRESS',
};

const FEED_LABEL: Record<FeedName, string> = { brl_usd: 'BRL/USD', usdt_usd: 'USDT/USD' };

/**
 * How far ahead of this process's clock a feed's `updatedAt` may be: block times and server clocks
 * drift by seconds; anything further is a feed (or a clock) that cannot be trusted.
 */
export const FUTURE_SKEW_SECONDS = 60;

/** Chainlink's USD feeds have 8 decimals, a few others 18; beyond this the answer is not a price. */
const MAX_FEED_DECIMALS = 36;

export interface PriceFeedSettings {
  brlUsd: Address;
  usdtUsd: Address;
  /** A feed whose last update is older than this is stale: no rate (PRICE_FEED_MAX_AGE_SECONDS). */
  maxAgeSeconds: number;
  /** How long a rate is reused (QUOTE_CACHE_SECONDS), never past a feed turning stale. */
  cacheMs: number;
}

/** One feed's latest round as read, before any judgement. */
export interface FeedReading {
  feed: FeedName;
  address: Address;
  answer: bigint;
  decimals: number;
  /** Unix seconds; 0 when the feed reports no completed round. */
  updatedAt: number;
}

export type FeedRead = FeedReading | { feed: FeedName; address: Address; error: string };

export interface FeedCheck {
  feed: FeedName;
  address: Address;
  /** ok: answers; missing: no such function at that address (no code, or a revert); unreadable: no answer. */
  state: 'ok' | 'missing' | 'unreadable';
  error?: string;
}

export interface PriceFeeds {
  /** The rate, cached; rejects with RateUnavailableError (stale, invalid, unreadable). */
  quote: QuoteSource;
  /** Both feeds as they are now, uncached (the gauges' scrape). */
  read(): Promise<FeedRead[]>;
  /** At start: each address must answer decimals() and latestRoundData(). */
  checkFeeds(): Promise<FeedCheck[]>;
}

/**
 * QUOTE_SOURCE=price-feeds (docs/decisions.md D52): BRL per USDT from a BRL/USD and a USDT/USD
 * Chainlink feed on the settlement chain, both read in parallel (one batched JSON-RPC request with
 * the client of `priceFeedChainClient`). A feed that cannot be read, answers zero or less, reports no
 * or a future update time, or was last updated more than `maxAgeSeconds` ago gives no rate at all.
 */
export function createPriceFeeds(deps: {
  chain: Pick<PublicClient, 'readContract'>;
  settings: PriceFeedSettings;
  now?: () => number;
}): PriceFeeds {
  const { chain, settings } = deps;
  const now = deps.now ?? Date.now;
  const feeds: [FeedName, Address][] = [
    ['brl_usd', settings.brlUsd],
    ['usdt_usd', settings.usdtUsd],
  ];
  // A feed's decimals never change (a new aggregator behind a proxy keeps them): read once.
  const decimalsOf = new Map<Address, number>();

  async function readFeed(feed: FeedName, address: Address): Promise<FeedReading> {
    const [decimals, round] = await Promise.all([
      decimalsOf.get(address) ??
        chain.readContract({ address, abi: AGGREGATOR_V3_ABI, functionName: 'decimals' }),
      chain.readContract({ address, abi: AGGREGATOR_V3_ABI, functionName: 'latestRoundData' }),
    ]);
    decimalsOf.set(address, decimals);
    const [, answer, , updatedAt] = round;
    return { feed, address, answer, decimals, updatedAt: Number(updatedAt) };
  }

  async function read(): Promise<FeedRead[]> {
    const answers = await Promise.allSettled(feeds.map(([feed, address]) => readFeed(feed, address)));
    return answers.map((a, i) =>
      a.status === 'fulfilled'
        ? a.value
        : { feed: feeds[i]![0], address: feeds[i]![1], error: shortError(a.reason) },
    );
  }

  async function fetchRate(): Promise<SourcedRate> {
    const readings = await read();
    const nowSeconds = Math.floor(now() / 1000);
    const refusals = readings.flatMap((r) => {
      const refusal = judge(r, nowSeconds, settings.maxAgeSeconds);
      return refusal ? [refusal] : [];
    });
    if (refusals.length > 0) {
      // The one reason a partner is told: an unreadable or invalid feed outranks a stale one.
      const reason = (['unreadable', 'invalid', 'stale'] as const).find((r) =>
        refusals.some((x) => x.reason === r),
      )!;
      throw new RateUnavailableError(reason, refusals.map((x) => x.detail).join('; '));
    }
    const [brlUsd, usdtUsd] = readings as [FeedReading, FeedReading];
    const oldest = Math.min(brlUsd.updatedAt, usdtUsd.updatedAt);
    return {
      rate: rateFromUsdPrices(usdtUsd, brlUsd),
      quotedAt: new Date(oldest * 1000).toISOString(),
      usableUntil: (oldest + settings.maxAgeSeconds) * 1000,
    };
  }

  return {
    quote: cachedQuote(fetchRate, { ttlMs: settings.cacheMs, now }),
    read,
    async checkFeeds() {
      return Promise.all(
        feeds.map(async ([feed, address]): Promise<FeedCheck> => {
          try {
            await readFeed(feed, address);
            return { feed, address, state: 'ok' };
          } catch (err) {
            const state = isMissingFunction(err) ? 'missing' : 'unreadable';
            return { feed, address, state, error: shortError(err) };
          }
        }),
      );
    },
  };
}

/** Why one feed's reading gives no rate, or undefined when it may be used. */
export function judge(
  r: FeedRead,
  nowSeconds: number,
  maxAgeSeconds: number,
): { reason: RateRefusal; detail: string } | undefined {
  const name = `${FEED_LABEL[r.feed]} feed ${r.address}`;
  if ('error' in r) return { reason: 'unreadable', detail: `${name} unreadable: ${r.error}` };
  if (r.answer <= 0n) return { reason: 'invalid', detail: `${name} answered ${r.answer}, not a price` };
  if (r.decimals > MAX_FEED_DECIMALS)
    return { reason: 'invalid', detail: `${name} has ${r.decimals} decimals` };
  if (r.updatedAt === 0) return { reason: 'invalid', detail: `${name} reports no completed round` };
  if (r.updatedAt > nowSeconds + FUTURE_SKEW_SECONDS)
    return { reason: 'invalid', detail: `${name} updated ${r.updatedAt - nowSeconds} s in the future` };
  const age = nowSeconds - r.updatedAt;
  if (age > maxAgeSeconds)
    return { reason: 'stale', detail: `${name} last updated ${age} s ago (at most ${maxAgeSeconds})` };
  return undefined;
}

/** The client the feeds are read through: reads only, short timeout, one HTTP request per batch. */
export function priceFeedChainClient(rpcUrl: string): Pick<PublicClient, 'readContract'> {
  return createPublicClient({
    transport: http(rpcUrl, { timeout: 10_000, retryCount: 1, batch: true }),
  });
}

/**
 * At the api's start: a feed address without the aggregator's functions (no code, another
 * contract) stops the process with a message naming its setting; one that cannot be read now is
 * logged, and every quote meanwhile is unavailable (POST answers 503).
 */
export async function reportPriceFeeds(
  feeds: Pick<PriceFeeds, 'checkFeeds'>,
  logger: { info(o: object, msg: string): void; warn(o: object, msg: string): void },
): Promise<void> {
  const checks = await feeds.checkFeeds();
  const missing = checks.filter((c) => c.state === 'missing');
  if (missing.length > 0) {
    throw new Error(
      `price feeds: ${missing
        .map(
          (c) =>
            `${FEED_SETTING[c.feed]} ${c.address} has no decimals() and latestRoundData() of a Chainlink feed (${c.error})`,
        )
        .join('; ')}: point the setting at the ${missing
        .map((c) => FEED_LABEL[c.feed])
        .join(' and ')} feed, or choose another QUOTE_SOURCE`,
    );
  }
  for (const c of checks) {
    if (c.state === 'unreadable') {
      logger.warn({ feed: c.feed, address: c.address, err: c.error }, 'price feed unreadable at start');
    }
  }
  logger.info({ feeds: checks.map((c) => `${c.feed}:${c.state}`) }, 'price feeds checked');
}
