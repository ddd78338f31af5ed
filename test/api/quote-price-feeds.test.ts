import { freePort } from '../../dev/local/infra/ports';
import { useStack, VALID_PAYOUT } from '../support/stack';
import { makeFeedStale, refreshFeed, setFeedAnswer, setFeedRound } from '../support/price-feeds';
import { call, expectError, post } from './helpers';

const STALE = 'quote unavailable: the price feed is stale, retry later';
const UNAVAILABLE = 'quote unavailable, retry later';

// Treasury mode quotes from the chain's price feeds by default (docs/decisions.md D52): on the real
// stack (anvil with the test BRL/USD and USDT/USD feeds), a stale or unusable feed refuses POST
// /v1/payouts and GET /v1/quotes with 503 and Retry-After, creates nothing and frees the key; and an
// api pointed at a contract that is no feed does not start.
describe('treasury mode: quotes from price feeds (dev server, PostgreSQL, anvil, sandbox, worker, api)', () => {
  // No rate cache: each request reads the feeds, so each test sees what it just wrote to them.
  const stack = useStack({ env: { SETTLEMENT_MODE: 'treasury', QUOTE_CACHE_SECONDS: '0' } });
  const feeds = () => ({
    rpc: stack.rpcUrl,
    brl: stack.chain.brlUsdFeedAddress,
    usdt: stack.chain.usdtUsdFeedAddress,
  });
  const preview = (apiKey: string) =>
    call(stack.apiUrl, '/v1/quotes?amount_brl=100', { headers: { 'x-api-key': apiKey } });
  const payoutsOf = async (partnerId: string) =>
    Number(
      (
        await stack.db.query<{ n: string }>('SELECT count(*)::text AS n FROM payouts WHERE partner_id = $1', [
          partnerId,
        ])
      ).rows[0]!.n,
    );
  const keysOf = async (partnerId: string) =>
    Number(
      (
        await stack.db.query<{ n: string }>(
          'SELECT count(*)::text AS n FROM idempotency_keys WHERE partner_id = $1',
          [partnerId],
        )
      ).rows[0]!.n,
    );

  afterEach(async () => {
    const { rpc, brl, usdt } = feeds();
    await setFeedAnswer(rpc, brl, 18_000_000n);
    await setFeedAnswer(rpc, usdt, 100_010_000n);
  });

  it('quotes from the feeds: 1.0001 / 0.18 BRL per USDT', async () => {
    expect(stack.config.QUOTE_SOURCE).toBe('price-feeds');
    const { apiKey } = await stack.createPartner();
    const res = await preview(apiKey);
    // 100 / (5.55611112 × 1.06), rounded down to 6 decimals.
    expect(res.json).toMatchObject({ amount_brl: 100, min_amount_usdt: 16.979434 });
    const { payout } = await stack.createPayout(apiKey);
    expect(payout.min_amount_usdt).toBe(16.979434);
  });

  it('a stale feed: 503 with its own message and Retry-After, nothing created, the key freed', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const { rpc, brl } = feeds();
    // Older than the default PRICE_FEED_MAX_AGE_SECONDS (25 h).
    await makeFeedStale(rpc, brl, 26 * 3600);

    const refused = await post(stack.apiUrl, apiKey, VALID_PAYOUT, { 'idempotency-key': 'stale-1' });
    expectError(refused, 503, STALE);
    expect(refused.headers.get('retry-after')).toBe('60');
    const previewed = await preview(apiKey);
    expectError(previewed, 503, STALE);
    expect(previewed.headers.get('retry-after')).toBe('60');
    expect(await payoutsOf(partnerId)).toBe(0);
    expect(await keysOf(partnerId)).toBe(0);

    // The feed's next round: the same key is a fresh attempt, not a replay of the refusal.
    await refreshFeed(rpc, brl);
    const created = await post(stack.apiUrl, apiKey, VALID_PAYOUT, { 'idempotency-key': 'stale-1' });
    expect(created.status).toBe(201);
    expect(created.headers.get('idempotent-replayed')).toBeNull();
    expect(await payoutsOf(partnerId)).toBe(1);
  });

  it.each([
    ['a zero answer', { answer: 0n }],
    ['an update time in the future', { future: true }],
  ])('%s: 503 quote unavailable with Retry-After, nothing created', async (_what, round) => {
    const { partnerId, apiKey } = await stack.createPartner();
    const { rpc, usdt } = feeds();
    const now = BigInt(Math.floor(Date.now() / 1000));
    await setFeedRound(rpc, usdt, {
      answer: 'answer' in round ? round.answer : 100_010_000n,
      updatedAt: 'future' in round ? now + 3600n : now,
    });
    const refused = await post(stack.apiUrl, apiKey, VALID_PAYOUT, { 'idempotency-key': 'bad-feed' });
    expectError(refused, 503, UNAVAILABLE);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await payoutsOf(partnerId)).toBe(0);
    expect(await keysOf(partnerId)).toBe(0);
  });

  it("QUOTE_SOURCE=static quotes the operator's rate and nothing else", async () => {
    const { apiKey } = await stack.createPartner();
    // The stale feed is not read: the static source never looks at the chain.
    await makeFeedStale(stack.rpcUrl, stack.chain.brlUsdFeedAddress, 26 * 3600);
    const { url } = await stack.startApi({ QUOTE_SOURCE: 'static', FX_STATIC_RATE: '5.00' });
    const res = await call(url, '/v1/quotes?amount_brl=100', { headers: { 'x-api-key': apiKey } });
    // 100 / (5.00 × 1.06), rounded down.
    expect(res.json).toMatchObject({ amount_brl: 100, min_amount_usdt: 18.867924 });
  });

  it('an api whose feed address is another contract stops at start, naming the setting', async () => {
    await expect(
      stack.startProcess('api', { PRICE_FEED_BRL_USD_ADDRESS: stack.usdtAddress }),
    ).rejects.toThrow(
      `price feeds: PRICE_FEED_BRL_USD_ADDRESS ${stack.usdtAddress} has no decimals() and latestRoundData() of a Chainlink feed`,
    );
  }, 60_000);

  it('the api process checks the feeds at start and exposes their age and answer', async () => {
    const metricsPort = String(await freePort());
    await stack.startProcess('api', { METRICS_PORT: metricsPort });
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(text).toMatch(
      new RegExp(
        `^price_feed_answer\\{feed="brl_usd",address="${stack.chain.brlUsdFeedAddress}"\\} 0\\.18$`,
        'm',
      ),
    );
    expect(text).toMatch(/^price_feed_age_seconds\{feed="usdt_usd",address="0x[0-9a-fA-F]{40}"\} \d+$/m);
    expect(text).toMatch(/^price_feed_readable\{feed="brl_usd",address="0x[0-9a-fA-F]{40}"\} 1$/m);
    expect(text).toMatch(/^price_feed_max_age_seconds 90000$/m);
  }, 60_000);
});
