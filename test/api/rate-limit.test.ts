import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { freePort } from '../../dev/local/infra/ports';
import { startStack, VALID_PAYOUT, type TestStack } from '../support/stack';
import { expectError, getPayout, post, type ApiResponse } from './helpers';

// Token buckets per API key, kept in PostgreSQL and so shared by every api replica (docs/decisions.md
// section 3). Small limits keep the test fast: at 5 a minute a token comes back every 12 s, longer
// than any sequence below takes.
const POST_LIMIT = 5;
const READ_LIMIT = 8;
const LIMIT_MESSAGE = 'rate limit exceeded, retry after 60 seconds';

describe('rate limits', () => {
  let stack: TestStack;
  let replica: { url: string; close(): Promise<void> };
  let processApi: { url: string; child: ChildProcess };

  beforeAll(async () => {
    stack = await startStack({
      env: { POST_RATE_LIMIT_PER_MINUTE: String(POST_LIMIT), READ_RATE_LIMIT_PER_MINUTE: String(READ_LIMIT) },
    });
    replica = await stack.startApiReplica();
    processApi = await spawnApiProcess(stack);
  }, 120_000);
  afterAll(async () => {
    processApi?.child.kill('SIGTERM');
    await replica?.close();
    await stack?.close();
  });

  const invalid = { ...VALID_PAYOUT, amount_brl: 0 };

  function expectLimited(res: ApiResponse): void {
    expectError(res, 429, LIMIT_MESSAGE);
    expect(res.headers.get('retry-after')).toBe('60');
  }

  it(`POST: ${POST_LIMIT} requests pass, the next gets 429 with Retry-After: 60; 400s spend tokens too`, async () => {
    const { apiKey } = await stack.createPartner();
    expect((await post(stack.apiUrl, apiKey, VALID_PAYOUT)).status).toBe(201);
    for (let i = 1; i < POST_LIMIT; i += 1) {
      expectError(await post(stack.apiUrl, apiKey, invalid), 400, 'amount_brl must be > 0');
    }
    expectLimited(await post(stack.apiUrl, apiKey, VALID_PAYOUT));
    expectLimited(await post(stack.apiUrl, apiKey, invalid));
  });

  it('a 429 is answered before the body is looked at, and replays are limited too', async () => {
    const { apiKey } = await stack.createPartner();
    const first = await post(stack.apiUrl, apiKey, VALID_PAYOUT, { 'idempotency-key': 'k' });
    expect(first.status).toBe(201);
    for (let i = 1; i < POST_LIMIT; i += 1) await post(stack.apiUrl, apiKey, '{broken');
    expectLimited(await post(stack.apiUrl, apiKey, '{broken'));
    expectLimited(await post(stack.apiUrl, apiKey, VALID_PAYOUT, { 'idempotency-key': 'k' }));
  });

  it('GET has its own bucket: an exhausted POST bucket does not block reads, and reads stop at their own limit', async () => {
    const { apiKey } = await stack.createPartner();
    const created = await post(stack.apiUrl, apiKey, VALID_PAYOUT);
    const id = (created.json as { id: string }).id;
    for (let i = 1; i < POST_LIMIT; i += 1) await post(stack.apiUrl, apiKey, invalid);
    expectLimited(await post(stack.apiUrl, apiKey, invalid));

    // A 404 spends a read token like a 200 does.
    for (let i = 0; i < READ_LIMIT; i += 1) {
      const res = await getPayout(stack.apiUrl, apiKey, i % 2 === 0 ? id : randomUUID());
      expect(res.status).toBe(i % 2 === 0 ? 200 : 404);
    }
    expectLimited(await getPayout(stack.apiUrl, apiKey, id));
  });

  it('buckets are per API key: one partner at its limit does not affect another', async () => {
    const busy = await stack.createPartner();
    const calm = await stack.createPartner();
    for (let i = 0; i < POST_LIMIT; i += 1) await post(stack.apiUrl, busy.apiKey, invalid);
    expectLimited(await post(stack.apiUrl, busy.apiKey, invalid));
    expectError(await post(stack.apiUrl, calm.apiKey, invalid), 400, 'amount_brl must be > 0');
  });

  it('requests without a valid key spend nothing (they are refused with 401 before the limiter)', async () => {
    const { apiKey } = await stack.createPartner();
    for (let i = 0; i < POST_LIMIT * 2; i += 1) {
      expectError(await post(stack.apiUrl, 'wrong-key', invalid), 401, 'invalid API key');
    }
    expectError(await post(stack.apiUrl, apiKey, invalid), 400, 'amount_brl must be > 0');
  });

  it('one bucket across two api replicas in this process', async () => {
    const { apiKey } = await stack.createPartner();
    const urls = [stack.apiUrl, replica.url];
    for (let i = 0; i < POST_LIMIT; i += 1) {
      expect((await post(urls[i % 2]!, apiKey, invalid)).status).toBe(400);
    }
    expectLimited(await post(stack.apiUrl, apiKey, invalid));
    expectLimited(await post(replica.url, apiKey, invalid));
  });

  it('one bucket across api processes: a separately spawned api shares it', async () => {
    const { apiKey } = await stack.createPartner();
    for (let i = 0; i < POST_LIMIT; i += 1) {
      const url = i < 3 ? processApi.url : stack.apiUrl;
      expect((await post(url, apiKey, invalid)).status).toBe(400);
    }
    expectLimited(await post(processApi.url, apiKey, invalid));
    expectLimited(await post(stack.apiUrl, apiKey, invalid));
  });

  it('a concurrent burst across three apis lets exactly the limit through', async () => {
    const { apiKey } = await stack.createPartner();
    const urls = [stack.apiUrl, replica.url, processApi.url];
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => post(urls[i % urls.length]!, apiKey, invalid)),
    );
    const passed = results.filter((r) => r.status === 400);
    const limited = results.filter((r) => r.status === 429);
    expect(passed).toHaveLength(POST_LIMIT);
    expect(limited).toHaveLength(30 - POST_LIMIT);
    for (const r of limited) expectLimited(r);
  });

  it('concurrent reads across replicas: exactly the read limit passes', async () => {
    const { apiKey } = await stack.createPartner();
    const urls = [stack.apiUrl, replica.url, processApi.url];
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => getPayout(urls[i % urls.length]!, apiKey, randomUUID())),
    );
    expect(results.filter((r) => r.status === 404)).toHaveLength(READ_LIMIT);
    expect(results.filter((r) => r.status === 429)).toHaveLength(20 - READ_LIMIT);
  });
});

/**
 * `src/main/api.ts` as its own OS process (what production runs), pointed at the stack's
 * PostgreSQL and Temporal, with the same limits. Resolves once it answers /healthz.
 */
async function spawnApiProcess(stack: TestStack): Promise<{ url: string; child: ChildProcess }> {
  const root = path.resolve(__dirname, '../..');
  const port = await freePort();
  const child = spawn(path.join(root, 'node_modules/.bin/tsx'), ['src/main/api.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: 'silent',
      HOST: '127.0.0.1',
      PORT: String(port),
      METRICS_PORT: String(await freePort()),
      DATABASE_URL: stack.config.DATABASE_URL,
      TEMPORAL_ADDRESS: stack.config.TEMPORAL_ADDRESS,
      TEMPORAL_NAMESPACE: stack.config.TEMPORAL_NAMESPACE,
      TEMPORAL_TASK_QUEUE: stack.config.TEMPORAL_TASK_QUEUE,
      PROVIDER_API_URL: stack.config.PROVIDER_API_URL,
      POST_RATE_LIMIT_PER_MINUTE: String(POST_LIMIT),
      READ_RATE_LIMIT_PER_MINUTE: String(READ_LIMIT),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`api process exited (${child.exitCode}): ${stderr}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) return { url, child };
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGTERM');
  throw new Error(`api process did not start in time: ${stderr}`);
}
