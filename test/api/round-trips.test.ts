import { randomUUID } from 'node:crypto';
import type { PoolClient } from 'pg';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { upsertPayout } from '../../src/adapters/db/payouts-repo';
import { completedPayout } from '../support/payouts';
import { useStack, VALID_PAYOUT } from '../support/stack';
import type { RunningApi } from '../support/api';
import { call, expectError, getPayout, post } from './helpers';

// The database statements a request sends on the api's pool (docs/decisions.md D78, D79): a closed
// GET is one (the API key, its rate-limit tokens and the payout's row), a POST with an
// Idempotency-Key three (the API key with its tokens and the key's recorded answer; the claim; the
// record with the read model's catch-up). Counted on a real pool against the real PostgreSQL: every
// statement any pooled connection sends, BEGIN and COMMIT included. Screening's denylist read is on
// the stack's own pool, not counted here.
describe('database round trips per request', () => {
  const stack = useStack();
  let db: Db;
  let api: RunningApi;
  let statements: string[] = [];

  beforeAll(async () => {
    db = createPool(stack.config.DATABASE_URL, 4);
    db.on('connect', (client: PoolClient) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const [first] = args;
        statements.push(typeof first === 'string' ? first : String((first as { text?: string }).text));
        return query(...args);
      };
    });
    api = await stack.startApi({}, { db });
  });
  afterAll(async () => {
    await api.close();
    await db.end();
  });

  /**
   * The statements `request` sent, its claim's lease renewals left out: those depend on how long the
   * request took (one every 500 ms, D73), which a loaded machine decides, not the code.
   */
  async function counted<T>(request: () => Promise<T>): Promise<{ answer: T; statements: string[] }> {
    statements = [];
    const answer = await request();
    return {
      answer,
      statements: statements.filter((s) => !/^UPDATE idempotency_keys SET lease_until = now\(\) \+/.test(s)),
    };
  }

  it('a closed GET is one statement, and a revoked key is refused at once all the same', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const payout = completedPayout({ partnerId });
    await upsertPayout(stack.db, payout, `round-trips-${payout.id}`, 'run');

    const read = await counted(() => getPayout(api.url, apiKey, payout.id));
    expect(read.answer.status).toBe(200);
    expect(read.answer.json).toMatchObject({ id: payout.id, status: 'COMPLETED' });
    expect(read.statements).toHaveLength(1);

    // Another partner's payout, an unknown one: the same 404, in the same one statement.
    const other = await stack.createPartner();
    const foreign = await counted(() => getPayout(api.url, other.apiKey, payout.id));
    expectError(foreign.answer, 404);
    expect(foreign.statements).toHaveLength(1);
    const unknown = await counted(() => getPayout(api.url, apiKey, randomUUID()));
    expectError(unknown.answer, 404);

    await stack.db.query('UPDATE api_keys SET revoked_at = now() WHERE partner_id = $1', [partnerId]);
    const revoked = await getPayout(api.url, apiKey, payout.id);
    expectError(revoked, 401);
  });

  it("a QR code and a cancel read their payout with the API key: one statement until the workflow's turn", async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const payout = completedPayout({ partnerId });
    await upsertPayout(stack.db, payout, `round-trips-${payout.id}`, 'run');
    const headers = { 'x-api-key': apiKey };

    const qr = await counted(() => call(api.url, `/v1/payouts/${payout.id}/qr.svg`, { headers }));
    expectError(qr.answer, 410);
    expect(qr.statements).toHaveLength(1);

    const cancel = await counted(() =>
      call(api.url, `/v1/payouts/${payout.id}/cancel`, { method: 'POST', headers }),
    );
    expectError(cancel.answer, 409);
    expect(cancel.statements).toHaveLength(1);

    // Another partner's payout, and an id that is no UUID: the same 404, in the same one statement.
    const other = await stack.createPartner();
    const foreign = await counted(() =>
      call(api.url, `/v1/payouts/${payout.id}/cancel`, {
        method: 'POST',
        headers: { 'x-api-key': other.apiKey },
      }),
    );
    expectError(foreign.answer, 404);
    expect(foreign.statements).toHaveLength(1);
    const malformed = await counted(() => call(api.url, '/v1/payouts/not-a-uuid/qr.png', { headers }));
    expectError(malformed.answer, 404);
    expect(malformed.statements).toHaveLength(1);
  });

  it('a POST with an Idempotency-Key is three statements, its replay two', async () => {
    const { apiKey } = await stack.createPartner();
    const key = randomUUID();
    const created = await counted(() => post(api.url, apiKey, VALID_PAYOUT, { 'idempotency-key': key }));
    expect(created.answer.status).toBe(201);
    expect(created.statements).toHaveLength(3);

    // The key's answer came with the API key; the replay reads its payout.
    const replay = await counted(() => post(api.url, apiKey, VALID_PAYOUT, { 'idempotency-key': key }));
    expect(replay.answer.status).toBe(201);
    expect(replay.answer.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.answer.json).toMatchObject({ id: (created.answer.json as { id: string }).id });
    expect(replay.statements).toHaveLength(2);
  });

  it('a POST without an Idempotency-Key is two statements: the API key and the catch-up', async () => {
    const { apiKey } = await stack.createPartner();
    const created = await counted(() => post(api.url, apiKey, VALID_PAYOUT));
    expect(created.answer.status).toBe(201);
    expect(created.statements).toHaveLength(2);
    // The read model holds the charge POST handed out. This stack's worker writes it as well, so this
    // alone does not show the catch-up: test/db/payout-catch-up.test.ts does (D79).
    const { rows } = await stack.db.query<{ pix_copy_paste: string }>(
      'SELECT pix_copy_paste FROM payouts WHERE id = $1',
      [(created.answer.json as { id: string }).id],
    );
    expect(rows[0]!.pix_copy_paste).toBe((created.answer.json as { pix_copy_paste: string }).pix_copy_paste);
  });
});
