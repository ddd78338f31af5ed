import { randomUUID } from 'node:crypto';
import { rotateApiKey } from '../../src/adapters/db/credential-rotation';
import { setPartnerStatus } from '../../src/adapters/db/partners-repo';
import { useStack, VALID_PAYOUT } from '../support/stack';
import { call, expectError, getPayout, post } from './helpers';

// Authentication (docs/api.md "Authentication", docs/decisions.md D7) and partner isolation.
describe('partner authentication and isolation', () => {
  const stack = useStack();

  describe('the X-Api-Key header', () => {
    it.each([
      ['POST', () => post(stack.apiUrl, undefined, VALID_PAYOUT)],
      ['GET', () => getPayout(stack.apiUrl, undefined, randomUUID())],
    ])('%s without it -> 401 "missing X-API-Key header"', async (_method, send) => {
      expectError(await send(), 401, 'missing X-API-Key header');
    });

    it('an empty value counts as missing', async () => {
      expectError(await post(stack.apiUrl, '', VALID_PAYOUT), 401, 'missing X-API-Key header');
    });

    it.each([
      ['an unknown key', 'pk_live_not-a-real-key'],
      ['a key with one character changed', null],
      ['a key with a suffix', 'suffix'],
      ['a very long key', 'x'.repeat(8_000)],
    ])('%s -> 401 "invalid API key" on POST and GET', async (_what, variant) => {
      const { apiKey } = await stack.createPartner();
      const key =
        variant === null
          ? `${apiKey.slice(0, -1)}${apiKey.endsWith('A') ? 'B' : 'A'}`
          : variant === 'suffix'
            ? `${apiKey}x`
            : variant;
      expectError(await post(stack.apiUrl, key, VALID_PAYOUT), 401, 'invalid API key');
      expectError(await getPayout(stack.apiUrl, key, randomUUID()), 401, 'invalid API key');
    });

    it.each(['X-Api-Key', 'X-API-Key', 'x-api-key', 'X-API-KEY', 'x-Api-kEY'])(
      'the header name is case-insensitive: %s',
      async (header) => {
        const { apiKey } = await stack.createPartner();
        const created = await post(stack.apiUrl, undefined, VALID_PAYOUT, { [header]: apiKey });
        expect(created.status).toBe(201);
        const id = (created.json as { id: string }).id;
        const read = await call(stack.apiUrl, `/v1/payouts/${id}`, { headers: { [header]: apiKey } });
        expect(read.status).toBe(200);
      },
    );

    it('is checked before the body: an invalid body without a key -> 401, not 400', async () => {
      expectError(await post(stack.apiUrl, undefined, '{not json'), 401, 'missing X-API-Key header');
      expectError(await post(stack.apiUrl, 'wrong', { amount_brl: -1 }), 401, 'invalid API key');
    });

    it('a rotated-away key is refused; the new key works and still sees the payouts', async () => {
      const { partnerId, apiKey: oldKey } = await stack.createPartner();
      const created = await post(stack.apiUrl, oldKey, VALID_PAYOUT);
      expect(created.status).toBe(201);
      const newKey = (await rotateApiKey(stack.db, partnerId))!.issued;
      expect(newKey).not.toBe(oldKey);

      expectError(await post(stack.apiUrl, oldKey, VALID_PAYOUT), 401, 'invalid API key');
      expectError(
        await getPayout(stack.apiUrl, oldKey, (created.json as { id: string }).id),
        401,
        'invalid API key',
      );
      const read = await getPayout(stack.apiUrl, newKey, (created.json as { id: string }).id);
      expect(read.status).toBe(200);
      expect(read.json).toEqual(created.json);
    });

    it('a disabled partner -> 401 "invalid API key"; enabled again, its key works', async () => {
      const { partnerId, apiKey } = await stack.createPartner();
      const created = await post(stack.apiUrl, apiKey, VALID_PAYOUT);
      const id = (created.json as { id: string }).id;
      await setPartnerStatus(stack.db, partnerId, 'disabled');
      expectError(await post(stack.apiUrl, apiKey, VALID_PAYOUT), 401, 'invalid API key');
      expectError(await getPayout(stack.apiUrl, apiKey, id), 401, 'invalid API key');
      await setPartnerStatus(stack.db, partnerId, 'active');
      expect((await getPayout(stack.apiUrl, apiKey, id)).status).toBe(200);
    });

    it('keys are stored only as SHA-256 hashes', async () => {
      const { partnerId, apiKey } = await stack.createPartner();
      const { rows } = await stack.db.query<{ key_hash: Buffer; key_prefix: string }>(
        'SELECT key_hash, key_prefix FROM api_keys WHERE partner_id = $1',
        [partnerId],
      );
      expect(rows).toHaveLength(1);
      expect(rows[0]!.key_hash).toHaveLength(32);
      expect(apiKey.startsWith(rows[0]!.key_prefix)).toBe(true);
      expect(rows[0]!.key_prefix.length).toBeLessThan(apiKey.length / 2);
    });
  });

  describe('partner isolation on GET /v1/payouts/{id}', () => {
    let owner: { partnerId: string; apiKey: string };
    let other: { partnerId: string; apiKey: string };
    let payoutId: string;

    beforeAll(async () => {
      owner = await stack.createPartner('owner');
      other = await stack.createPartner('other');
      const created = await post(stack.apiUrl, owner.apiKey, VALID_PAYOUT);
      expect(created.status).toBe(201);
      payoutId = (created.json as { id: string }).id;
    });

    it('the owner reads it: 200, with its own partner_id', async () => {
      const res = await getPayout(stack.apiUrl, owner.apiKey, payoutId);
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ id: payoutId, partner_id: owner.partnerId });
    });

    it('the id is matched case-insensitively (a UUID is hex)', async () => {
      const res = await getPayout(stack.apiUrl, owner.apiKey, payoutId.toUpperCase());
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ id: payoutId });
    });

    it.each([
      ["another partner's payout", () => payoutId, () => other.apiKey],
      ['an unknown id', () => randomUUID(), () => owner.apiKey],
      ['a malformed id', () => 'not-a-uuid', () => owner.apiKey],
      ['an id with a suffix', () => `${payoutId}x`, () => owner.apiKey],
      ['an id in braces', () => `{${payoutId}}`, () => owner.apiKey],
      ['a SQL-looking id', () => encodeURIComponent("' OR 1=1 --"), () => owner.apiKey],
      ['a very long id', () => 'a'.repeat(5_000), () => owner.apiKey],
      ['an empty id', () => '', () => owner.apiKey],
    ])('%s -> 404 "payout not found" (no existence leak)', async (_what, id, key) => {
      expectError(await getPayout(stack.apiUrl, key(), id()), 404, 'payout not found');
    });

    it('the 404 for a foreign payout is byte-identical to the one for an unknown id', async () => {
      const foreign = await getPayout(stack.apiUrl, other.apiKey, payoutId);
      const unknown = await getPayout(stack.apiUrl, other.apiKey, randomUUID());
      expect(foreign.text).toBe(unknown.text);
      expect(foreign.status).toBe(unknown.status);
    });
  });
});
