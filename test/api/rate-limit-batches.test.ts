import { randomUUID } from 'node:crypto';
import { hashApiKey } from '../../src/adapters/db/partners-repo';
import { batchSize, TokenLeases } from '../../src/api/token-leases';
import { useStack } from '../support/stack';
import { expectError, getPayout } from './helpers';

// Under a high limit an api replica takes a batch of tokens at once (docs/decisions.md D76): the
// bucket's row is written once per batch, not once per request, and no replica ever spends more
// than the bucket gave out.
const READ_LIMIT = 6_000; // a batch of 10

describe('rate-limit batches', () => {
  const stack = useStack({ env: { READ_RATE_LIMIT_PER_MINUTE: String(READ_LIMIT) } });

  const bucketRow = async (apiKeyHashHex: string) =>
    (
      await stack.db.query<{ tokens: number; written: string }>(
        `SELECT tokens, refilled_at::text AS written FROM rate_limit_buckets WHERE bucket LIKE $1`,
        [`%${apiKeyHashHex}`],
      )
    ).rows;

  it('the bucket function grants what it has, up to what was asked, and nothing from an empty bucket', async () => {
    const bucket = `test-${randomUUID()}`;
    const take = async (wanted: number) =>
      (
        await stack.db.query<{ granted: number }>(
          'SELECT take_rate_limit_tokens($1, 5, 0.0001, $2) AS granted',
          [bucket, wanted],
        )
      ).rows[0]!.granted;
    expect(await take(3)).toBe(3);
    expect(await take(3)).toBe(2);
    expect(await take(3)).toBe(0);
    expect(await take(1)).toBe(0);
  });

  it('a batch size is a tenth of a second of refill, one token under an ordinary limit', () => {
    expect(batchSize(60)).toBe(1);
    expect(batchSize(600)).toBe(1);
    expect(batchSize(6_000)).toBe(10);
  });

  it('held tokens are spent, then dropped once their second is over', () => {
    let now = 0;
    const leases = new TokenLeases(() => now);
    expect(leases.take('b')).toBe(false);
    leases.keep('b', 2);
    expect(leases.take('b')).toBe(true);
    expect(leases.take('b')).toBe(true);
    expect(leases.take('b')).toBe(false);
    leases.keep('b', 5);
    now = 1_000;
    expect(leases.take('b')).toBe(false);
  });

  it('batches fetched by concurrent requests add up instead of replacing each other', () => {
    let now = 0;
    const leases = new TokenLeases(() => now);
    leases.keep('b', 9);
    leases.keep('b', 9);
    let spent = 0;
    while (leases.take('b')) spent += 1;
    expect(spent).toBe(18);
    leases.keep('b', 3);
    now = 999;
    leases.keep('b', 1);
    now = 1_500;
    // The holding lasts a second from the latest batch.
    expect(leases.take('b')).toBe(true);
  });

  it('ten reads on one replica write the bucket once; a revoked key is refused at once anyway', async () => {
    const { apiKey, partnerId } = await stack.createPartner();
    const keyHash = hashApiKey(apiKey).toString('hex');
    const id = randomUUID();
    expect((await getPayout(stack.apiUrl, apiKey, id)).status).toBe(404);
    const first = await bucketRow(keyHash);
    expect(first).toHaveLength(1);
    // The first request took a batch of 10 from the full bucket.
    expect(first[0]!.tokens).toBe(READ_LIMIT - 10);
    for (let i = 0; i < 9; i += 1) expect((await getPayout(stack.apiUrl, apiKey, id)).status).toBe(404);
    // The other nine spent the batch: the row was not written again (each write stamps refilled_at).
    expect(await bucketRow(keyHash)).toEqual(first);
    // A token held by the replica does not keep a revoked key alive.
    await stack.db.query('UPDATE api_keys SET revoked_at = now() WHERE partner_id = $1', [partnerId]);
    expectError(await getPayout(stack.apiUrl, apiKey, id), 401, 'invalid API key');
  });
});
