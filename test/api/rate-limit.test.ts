import { randomUUID } from 'node:crypto';
import { freePort } from '../../dev/local/infra/ports';
import { rotateApiKey } from '../../src/adapters/db/credential-rotation';
import { useStack, VALID_PAYOUT } from '../support/stack';
import { call, expectError, getPayout, post, type ApiResponse } from './helpers';

// Token buckets per API key, kept in PostgreSQL and so shared by every api replica (docs/decisions.md
// section 3). A bucket holds a minute's limit and refills continuously (at 5 a minute, a token every
// 12 s): a sequence on a slow machine may see a token come back. Each check sends until the first
// 429 and allows exactly the capacity plus what the time the sequence took, on PostgreSQL's clock
// (the limiter's own), can have refilled; on a quick run that is the capacity itself.
const POST_LIMIT = 5;
const READ_LIMIT = 8;
const CALLBACK_LIMIT = 4;
const LIMIT_MESSAGE = 'rate limit exceeded, retry after 60 seconds';

describe('rate limits', () => {
  const stack = useStack({
    env: {
      POST_RATE_LIMIT_PER_MINUTE: String(POST_LIMIT),
      READ_RATE_LIMIT_PER_MINUTE: String(READ_LIMIT),
      CALLBACK_RATE_LIMIT_PER_MINUTE: String(CALLBACK_LIMIT),
    },
  });
  let replica: { url: string };
  // src/api/server.ts as its own OS process (what production runs), on the stack with the same limits.
  let processApi: { url: string };

  beforeAll(async () => {
    replica = await stack.startApi();
    const port = String(await freePort());
    await stack.startProcess('api', { PORT: port, LOG_LEVEL: 'silent' });
    processApi = { url: `http://127.0.0.1:${port}` };
  }, 120_000);
  const invalid = { ...VALID_PAYOUT, amount_brl: 0 };

  function expectLimited(res: ApiResponse): void {
    expectError(res, 429, LIMIT_MESSAGE);
    expect(res.headers.get('retry-after')).toBe('60');
  }

  /** PostgreSQL's clock, in ms: the one the buckets refill by. */
  const dbNow = async () =>
    (await stack.db.query<{ ms: number }>('SELECT extract(epoch FROM clock_timestamp()) * 1000 AS ms'))
      .rows[0]!.ms;

  /**
   * Sends `send(i)` until the first 429 (which must have the 429 shape) and checks how many passed:
   * the `left` tokens of a bucket refilling `perMinute`, plus what the elapsed time can have
   * refilled. Returns what passed.
   */
  async function untilLimited(
    send: (i: number) => Promise<ApiResponse>,
    { perMinute, left = perMinute }: { perMinute: number; left?: number },
  ): Promise<ApiResponse[]> {
    const started = await dbNow();
    const passed: ApiResponse[] = [];
    for (let i = 0; ; i += 1) {
      const res = await send(i);
      if (res.status === 429) {
        expectLimited(res);
        break;
      }
      passed.push(res);
      if (passed.length > perMinute * 10) throw new Error(`no 429 after ${passed.length} requests`);
    }
    expectPassed(passed.length, { perMinute, left }, (await dbNow()) - started);
    return passed;
  }

  function expectPassed(count: number, bucket: { perMinute: number; left: number }, elapsedMs: number): void {
    const refilled = Math.floor((elapsedMs / 60_000) * bucket.perMinute);
    expect(count).toBeGreaterThanOrEqual(bucket.left);
    expect(count).toBeLessThanOrEqual(bucket.left + refilled);
  }

  /** The same for requests sent all at once: those past the bucket's tokens are 429s. */
  async function burst(count: number, perMinute: number, send: (i: number) => Promise<ApiResponse>) {
    const started = await dbNow();
    const results = await Promise.all(Array.from({ length: count }, (_, i) => send(i)));
    const limited = results.filter((r) => r.status === 429);
    expectPassed(count - limited.length, { perMinute, left: perMinute }, (await dbNow()) - started);
    for (const r of limited) expectLimited(r);
    return results.filter((r) => r.status !== 429);
  }

  it(`POST: ${POST_LIMIT} requests pass, the next gets 429 with Retry-After: 60; 400s spend tokens too`, async () => {
    const { apiKey } = await stack.createPartner();
    const passed = await untilLimited((i) => post(stack.apiUrl, apiKey, i === 0 ? VALID_PAYOUT : invalid), {
      perMinute: POST_LIMIT,
    });
    expect(passed[0]!.status).toBe(201);
    for (const res of passed.slice(1)) expectError(res, 400, 'amount_brl must be > 0');
  });

  it('a 429 is answered before the body is looked at, and replays are limited too', async () => {
    const { apiKey } = await stack.createPartner();
    const replay = () => post(stack.apiUrl, apiKey, VALID_PAYOUT, { 'idempotency-key': 'k' });
    expect((await replay()).status).toBe(201);
    // The refusal comes where a 400 for the body would: the limiter answers first.
    const broken = await untilLimited(() => post(stack.apiUrl, apiKey, '{broken'), {
      perMinute: POST_LIMIT,
      left: POST_LIMIT - 1,
    });
    for (const res of broken) expect(res.status).toBe(400);
    // The bucket is empty: a replay is refused too (unless a token came back meanwhile).
    const replays = await untilLimited(replay, { perMinute: POST_LIMIT, left: 0 });
    for (const res of replays) expect(res.headers.get('idempotent-replayed')).toBe('true');
  });

  it('GET has its own bucket: an exhausted POST bucket does not block reads, and reads stop at their own limit', async () => {
    const { apiKey } = await stack.createPartner();
    const created = await post(stack.apiUrl, apiKey, VALID_PAYOUT);
    const id = (created.json as { id: string }).id;
    await untilLimited(() => post(stack.apiUrl, apiKey, invalid), {
      perMinute: POST_LIMIT,
      left: POST_LIMIT - 1,
    });

    // A 404 spends a read token like a 200 does.
    const reads = await untilLimited(
      (i) => getPayout(stack.apiUrl, apiKey, i % 2 === 0 ? id : randomUUID()),
      {
        perMinute: READ_LIMIT,
      },
    );
    expect(reads.map((r) => r.status)).toEqual(reads.map((_, i) => (i % 2 === 0 ? 200 : 404)));
  });

  it('buckets are per API key: one partner at its limit does not affect another', async () => {
    const busy = await stack.createPartner();
    const calm = await stack.createPartner();
    await untilLimited(() => post(stack.apiUrl, busy.apiKey, invalid), { perMinute: POST_LIMIT });
    expectError(await post(stack.apiUrl, calm.apiKey, invalid), 400, 'amount_brl must be > 0');
  });

  it('requests without a valid key spend nothing (they are refused with 401 before the limiter)', async () => {
    const { apiKey } = await stack.createPartner();
    for (let i = 0; i < POST_LIMIT * 2; i += 1) {
      expectError(await post(stack.apiUrl, 'wrong-key', invalid), 401, 'invalid API key');
    }
    await untilLimited(() => post(stack.apiUrl, apiKey, invalid), { perMinute: POST_LIMIT });
  });

  it('one bucket across two api replicas in this process', async () => {
    const { apiKey } = await stack.createPartner();
    const urls = [stack.apiUrl, replica.url];
    await untilLimited((i) => post(urls[i % 2]!, apiKey, invalid), { perMinute: POST_LIMIT });
  });

  it('one bucket across api processes: a separately spawned api shares it', async () => {
    const { apiKey } = await stack.createPartner();
    await untilLimited((i) => post(i < 3 ? processApi.url : stack.apiUrl, apiKey, invalid), {
      perMinute: POST_LIMIT,
    });
  });

  it('a concurrent burst across three apis lets exactly the limit through', async () => {
    const { apiKey } = await stack.createPartner();
    const urls = [stack.apiUrl, replica.url, processApi.url];
    const passed = await burst(30, POST_LIMIT, (i) => post(urls[i % urls.length]!, apiKey, invalid));
    for (const r of passed) expect(r.status).toBe(400);
  });

  it('concurrent reads across replicas: exactly the read limit passes', async () => {
    const { apiKey } = await stack.createPartner();
    const urls = [stack.apiUrl, replica.url, processApi.url];
    const passed = await burst(20, READ_LIMIT, (i) =>
      getPayout(urls[i % urls.length]!, apiKey, randomUUID()),
    );
    for (const r of passed) expect(r.status).toBe(404);
  });

  it('the callback routes have their own bucket, per partner: they spend neither the payout nor the read bucket', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    // A second key of the same partner (a key rotation's overlap): the bucket is the partner's.
    const second = (await rotateApiKey(stack.db, partnerId, 3600))!.issued;
    const keys = [apiKey, second];
    // No URL is set: the test is refused (409), and spends a token all the same.
    const routes: [method: string, path: string, status: number][] = [
      ['GET', '/v1/callback', 200],
      ['POST', '/v1/callback/test', 409],
      ['GET', '/v1/callback/events', 200],
      ['DELETE', '/v1/callback', 200],
    ];
    const passed = await untilLimited(
      (i) => {
        const [method, path] = routes[i % routes.length]!;
        return call(stack.apiUrl, path, { method, headers: { 'x-api-key': keys[i % 2]! } });
      },
      { perMinute: CALLBACK_LIMIT },
    );
    expect(passed.map((r) => r.status)).toEqual(passed.map((_, i) => routes[i % routes.length]![2]));
    for (const key of keys)
      expectLimited(await call(stack.apiUrl, '/v1/callback', { headers: { 'x-api-key': key } }));

    // The payout and read buckets of each key are whole.
    await untilLimited(() => post(stack.apiUrl, apiKey, invalid), { perMinute: POST_LIMIT });
    await untilLimited(() => getPayout(stack.apiUrl, second, randomUUID()), { perMinute: READ_LIMIT });
  });
});
