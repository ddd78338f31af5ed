import { Registry } from 'prom-client';
import { createPublicClient, http } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import {
  createPriceFeeds,
  priceFeedChainClient,
  reportPriceFeeds,
  type PriceFeeds,
} from '../../src/adapters/rates/price-feeds';
import { RateUnavailableError } from '../../src/domain/rate';
import { createLogger } from '../../src/observability/logger';
import { registerPriceFeedGauges } from '../../src/observability/price-feed-gauges';
import { freePort } from '../../dev/local/infra/ports';
import { startTestChain, type TestChain } from '../support/chain';
import { makeFeedStale, refreshFeed, setFeedAnswer, setFeedRound } from '../support/price-feeds';

// QUOTE_SOURCE=price-feeds on a real chain (anvil with the local BRL/USD 0.18 and USDT/USD 1.0001
// feeds, contracts/TestPriceFeed.sol): the rate from both feeds, and every refusal (an unknown,
// never a guess) as RateUnavailableError with its reason.
const MAX_AGE = 3_600;
const quietLog = { info() {}, warn() {} };

describe('price feeds (anvil, test aggregators)', () => {
  let chain: TestChain;
  const feedsOn = (over: Partial<Parameters<typeof createPriceFeeds>[0]['settings']> = {}, rpcUrl?: string) =>
    createPriceFeeds({
      chain: priceFeedChainClient(rpcUrl ?? chain.rpcUrl),
      // No cache: each quote reads the chain, so each test sees what it just wrote.
      settings: {
        brlUsd: chain.brlUsdFeedAddress,
        usdtUsd: chain.usdtUsdFeedAddress,
        maxAgeSeconds: MAX_AGE,
        cacheMs: 0,
        ...over,
      },
    });
  const refusal = async (feeds: PriceFeeds) => {
    const err = await feeds.quote().then(
      (q) => new Error(`quoted ${q.rate}`),
      (e: unknown) => e,
    );
    if (!(err instanceof RateUnavailableError)) throw err;
    return { reason: err.reason, message: err.message };
  };
  const nowSeconds = () => BigInt(Math.floor(Date.now() / 1000));

  beforeAll(async () => {
    chain = await startTestChain();
  }, 60_000);
  afterAll(() => chain?.stop());
  // Each test leaves both feeds as the chain started them: 0.18 and 1.0001, updated now.
  afterEach(async () => {
    await setFeedAnswer(chain.rpcUrl, chain.brlUsdFeedAddress, 18_000_000n);
    await setFeedAnswer(chain.rpcUrl, chain.usdtUsdFeedAddress, 100_010_000n);
  });

  it('quotes BRL per USDT as (USDT/USD) / (BRL/USD), 8 decimals rounded up, dated by the older feed', async () => {
    await makeFeedStale(chain.rpcUrl, chain.brlUsdFeedAddress, 120);
    const quote = await feedsOn().quote();
    // 1.0001 / 0.18 = 5.5561111…
    expect(quote.rate).toBe('5.55611112');
    const quotedAt = Date.parse(quote.quotedAt) / 1000;
    expect(Math.abs(quotedAt - (Date.now() / 1000 - 120))).toBeLessThan(5);

    await setFeedAnswer(chain.rpcUrl, chain.brlUsdFeedAddress, 20_000_000n);
    await setFeedAnswer(chain.rpcUrl, chain.usdtUsdFeedAddress, 99_950_000n);
    expect((await feedsOn().quote()).rate).toBe('4.99750000');
  });

  it('reuses a rate for the cache time, never past the moment a feed turns stale', async () => {
    await makeFeedStale(chain.rpcUrl, chain.usdtUsdFeedAddress, MAX_AGE - 10);
    const start = Date.now();
    const quote = await feedsOn({ cacheMs: 30_000 }).quote();
    const expires = Date.parse(quote.expiresAt);
    expect(expires).toBeLessThanOrEqual(start + 11_000);
    expect(expires).toBeGreaterThan(start);
  });

  it('refuses a feed older than the maximum age as stale, naming it', async () => {
    await makeFeedStale(chain.rpcUrl, chain.brlUsdFeedAddress, MAX_AGE + 60);
    const { reason, message } = await refusal(feedsOn());
    expect(reason).toBe('stale');
    expect(message).toMatch(
      new RegExp(`BRL/USD feed ${chain.brlUsdFeedAddress} last updated \\d+ s ago \\(at most ${MAX_AGE}\\)`),
    );
    // The same feed, fresh again: quoted.
    await refreshFeed(chain.rpcUrl, chain.brlUsdFeedAddress);
    expect((await feedsOn().quote()).rate).toBe('5.55611112');
  });

  type Round = { answer?: bigint; updatedAt?: bigint | 'future' };
  it.each<[string, Round, RegExp]>([
    ['a zero answer', { answer: 0n }, /USDT\/USD feed 0x[0-9a-fA-F]{40} answered 0, not a price/],
    ['a negative answer', { answer: -1n }, /USDT\/USD feed 0x[0-9a-fA-F]{40} answered -1, not a price/],
    ['no update time (updatedAt 0)', { updatedAt: 0n }, /reports no completed round/],
    ['an update time in the future', { updatedAt: 'future' }, /updated \d+ s in the future/],
  ])('refuses %s as invalid', async (_what, round, message) => {
    await setFeedRound(chain.rpcUrl, chain.usdtUsdFeedAddress, {
      answer: round.answer ?? 100_010_000n,
      updatedAt: round.updatedAt === 'future' ? nowSeconds() + 600n : (round.updatedAt ?? nowSeconds()),
    });
    const refused = await refusal(feedsOn());
    expect(refused.reason).toBe('invalid');
    expect(refused.message).toMatch(message);
  });

  it('takes an update time a few seconds ahead (clock skew) as current', async () => {
    await setFeedRound(chain.rpcUrl, chain.usdtUsdFeedAddress, {
      answer: 100_010_000n,
      updatedAt: nowSeconds() + 20n,
    });
    expect((await feedsOn().quote()).rate).toBe('5.55611112');
  });

  it('refuses as unreadable when the node does not answer, and tries again on the next quote', async () => {
    const feeds = feedsOn({}, `http://127.0.0.1:${await freePort()}`);
    const refused = await refusal(feeds);
    expect(refused.reason).toBe('unreadable');
    expect(refused.message).toMatch(/BRL\/USD feed .* unreadable/);
    // Nothing was cached: the same source answers once the feeds can be read (another client here).
    expect((await feedsOn().quote()).rate).toBe('5.55611112');
  });

  it('names an unreadable feed before a stale one', async () => {
    await makeFeedStale(chain.rpcUrl, chain.brlUsdFeedAddress, MAX_AGE + 60);
    const noCode = privateKeyToAddress(generatePrivateKey());
    const refused = await refusal(feedsOn({ usdtUsd: noCode }));
    expect(refused.reason).toBe('unreadable');
    // Both are in the operator's message; the partner is told the unknown, not the staleness.
    expect(refused.message).toMatch(/BRL\/USD feed .* last updated .*; USDT\/USD feed .* unreadable/);
  });

  describe('start check', () => {
    it('passes two feeds', async () => {
      await expect(reportPriceFeeds(feedsOn(), quietLog)).resolves.toBeUndefined();
    });

    it.each([
      [
        'an address without code',
        () => privateKeyToAddress(generatePrivateKey()),
        'brlUsd',
        'PRICE_FEED_BRL_USD_ADDRESS',
      ],
      [
        'another contract (the USDT token)',
        () => chain.usdtAddress,
        'usdtUsd',
        'PRICE_FEED_USDT_USD_ADDRESS',
      ],
    ] as const)('stops at %s, naming the setting', async (_what, address, key, setting) => {
      const wrong = address();
      await expect(reportPriceFeeds(feedsOn({ [key]: wrong }), quietLog)).rejects.toThrow(
        new RegExp(
          `^price feeds: ${setting} ${wrong} has no decimals\\(\\) and latestRoundData\\(\\) of a Chainlink feed .*choose another QUOTE_SOURCE$`,
        ),
      );
    });

    it('only warns when the node cannot be read at start (quotes are refused meanwhile)', async () => {
      const warned: object[] = [];
      const feeds = feedsOn({}, `http://127.0.0.1:${await freePort()}`);
      await reportPriceFeeds(feeds, { info() {}, warn: (o) => warned.push(o) });
      expect(warned).toHaveLength(2);
    });
  });

  it('reads in parallel: both feeds in one batched JSON-RPC request', async () => {
    const bodies: unknown[] = [];
    const client = createPublicClient({
      transport: http(chain.rpcUrl, {
        batch: true,
        onFetchRequest: async (req) => {
          bodies.push(await req.clone().json());
        },
      }),
    });
    const feeds = createPriceFeeds({
      chain: client,
      settings: {
        brlUsd: chain.brlUsdFeedAddress,
        usdtUsd: chain.usdtUsdFeedAddress,
        maxAgeSeconds: MAX_AGE,
        cacheMs: 0,
      },
    });
    await feeds.quote();
    // decimals() and latestRoundData() of both feeds: four calls, one HTTP request.
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).toHaveLength(4);
  });

  it('gauges each feed at scrape time: its age and answer, or unreadable', async () => {
    await makeFeedStale(chain.rpcUrl, chain.brlUsdFeedAddress, 7_200);
    const scrape = async (rpcUrl: string) => {
      const registry = new Registry();
      registerPriceFeedGauges(
        registry,
        feedsOn({}, rpcUrl),
        MAX_AGE,
        createLogger({ level: 'silent', name: 't' }),
      );
      return registry.metrics();
    };
    const text = await scrape(chain.rpcUrl);
    const brl = `feed="brl_usd",address="${chain.brlUsdFeedAddress}"`;
    const age = Number(new RegExp(`^price_feed_age_seconds\\{${brl}\\} (\\d+)$`, 'm').exec(text)?.[1]);
    expect(age).toBeGreaterThanOrEqual(7_200);
    expect(age).toBeLessThan(7_260);
    expect(text).toContain(`price_feed_answer{${brl}} 0.18`);
    expect(text).toContain(`price_feed_readable{${brl}} 1`);
    expect(text).toMatch(new RegExp(`^price_feed_max_age_seconds ${MAX_AGE}$`, 'm'));

    // A node that does not answer: readable 0, and no age or answer that would look like a price.
    const down = await scrape(`http://127.0.0.1:${await freePort()}`);
    expect(down).toContain(`price_feed_readable{${brl}} 0`);
    expect(down).not.toMatch(/^price_feed_age_seconds\{/m);
    expect(down).not.toMatch(/^price_feed_answer\{/m);
  });
});
