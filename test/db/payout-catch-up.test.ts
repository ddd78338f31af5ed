import { randomUUID } from 'node:crypto';
import {
  claimIdempotencyKey,
  markIdempotencyKeyRecorded,
  type ClaimRef,
  type IdempotencyClaim,
} from '../../src/adapters/db/idempotency-repo';
import { createPartner } from '../../src/adapters/db/partners-repo';
import { catchUpPayout, upsertPayout } from '../../src/adapters/db/payouts-repo';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { CLAIM_LEASE_SECONDS } from '../../src/api/payouts/claim-lease';
import { amend, transition, type PayoutRecord } from '../../src/domain/payout';
import { testDatabaseUrl } from '../support/env';
import { pendingPayout } from '../support/payouts';

// POST's catch-up of the read model (docs/decisions.md D79) on the real PostgreSQL: one conditional
// UPDATE, alone (no Idempotency-Key) or in the same statement as the key's record. What it must keep
// of upsertPayout's rule for the same run: only a newer version is written, never an interim status
// over a terminal one, never a row the workflow has not created; and the record and the catch-up are
// written together or not at all, the catch-up whoever holds the claim. The api's own tests cannot
// show this: the worker of their stack writes the same state a moment later.

const RUN = 'run-1';
const at = (minute: number) => `2026-11-21T22:${String(minute).padStart(2, '0')}:00.000Z`;

describe('the read model catch-up of POST (catchUpPayout, markIdempotencyKeyRecorded with catchUp)', () => {
  let db: Db;
  let partnerId: string;

  beforeAll(async () => {
    db = createPool(testDatabaseUrl(), 4);
    partnerId = (await createPartner(db, 'catch-up')).partner.id;
  });
  afterAll(() => db?.end());

  const pending = (): PayoutRecord => pendingPayout({ partnerId });
  const charged = (p: PayoutRecord) =>
    amend(p, at(1), { pixCopyPaste: '000201-payable', providerChargeId: 'chg_catch_up' });
  const write = (p: PayoutRecord) => upsertPayout(db, p, `payout-${p.id}`, RUN);

  async function row(id: string) {
    const { rows } = await db.query<{
      status: string;
      version: number;
      pix_copy_paste: string;
      run_id: string;
      workflow_id: string;
    }>('SELECT status, version, pix_copy_paste, run_id, workflow_id FROM payouts WHERE id = $1', [id]);
    return rows[0];
  }

  async function claimFor(p: PayoutRecord, key = `catch-up-${randomUUID()}`) {
    const c = await claimIdempotencyKey(db, {
      partnerId,
      key,
      newPayoutId: p.id,
      newWorkflowId: `payout-${p.id}`,
      ttlSeconds: 24 * 60 * 60,
      leaseSeconds: CLAIM_LEASE_SECONDS,
    });
    return { key, ref: refOf(key, c) };
  }
  const refOf = (key: string, c: IdempotencyClaim): ClaimRef => {
    if (c.kind !== 'claimed') throw new Error(`expected a claim, got ${JSON.stringify(c)}`);
    return { partnerId, key, token: c.token };
  };
  async function keyState(key: string) {
    const { rows } = await db.query<{ state: string }>(
      'SELECT state FROM idempotency_keys WHERE partner_id = $1 AND key = $2',
      [partnerId, key],
    );
    return rows[0]?.state;
  }

  describe.each([
    ['alone (no Idempotency-Key)', async (p: PayoutRecord) => catchUpPayout(db, p)],
    [
      "in the key's record",
      async (p: PayoutRecord) => {
        const { key, ref } = await claimFor(p);
        expect(await markIdempotencyKeyRecorded(db, ref, p)).toBe(true);
        expect(await keyState(key)).toBe('recorded');
      },
    ],
  ])('%s', (how, catchUp) => {
    it('writes the charge the workflow answered over the row its workflow created (same run, workflow id kept)', async () => {
      const v1 = pending();
      await write(v1);
      await catchUp(charged(v1));
      expect(await row(v1.id)).toEqual({
        status: 'PENDING',
        version: 2,
        pix_copy_paste: '000201-payable',
        run_id: RUN,
        workflow_id: `payout-${v1.id}`,
      });
    });

    it('never writes an older or the same version over a newer row (the workflow got there first)', async () => {
      const v1 = pending();
      const v2 = charged(v1);
      const v3 = transition(v2, 'PROCESSING', at(2), { paidAt: at(2) });
      await write(v3);
      await catchUp(v2);
      expect(await row(v1.id)).toMatchObject({ status: 'PROCESSING', version: 3 });
      // The same version with other content: the row is kept as well.
      await catchUp({ ...v3, pixCopyPaste: 'another-code' });
      expect(await row(v1.id)).toMatchObject({ version: 3, pix_copy_paste: '000201-payable' });
    });

    it('never writes a live status over a terminal one, whatever the versions', async () => {
      const v1 = pending();
      const failed = transition(v1, 'FAILED', at(2), { failureReason: 'charge_creation_failed' });
      await write(failed);
      await catchUp({ ...charged(charged(v1)), version: failed.version + 5 });
      expect(await row(v1.id)).toMatchObject({ status: 'FAILED', version: 2, pix_copy_paste: '' });
    });

    it('writes a terminal status of a newer version over a live one', async () => {
      const v1 = pending();
      await write(v1);
      const failed = transition(v1, 'FAILED', at(2), { failureReason: 'charge_creation_failed' });
      await catchUp(failed);
      expect(await row(v1.id)).toMatchObject({ status: 'FAILED', version: 2 });
    });

    it('creates no row: the workflow writes its own first', async () => {
      const v1 = pending();
      await catchUp(charged(v1));
      expect(await row(v1.id)).toBeUndefined();
    });

    it("never touches another partner's row of the same id", async () => {
      const other = (await createPartner(db, 'catch-up other')).partner.id;
      const theirs = pendingPayout({ partnerId: other });
      await write(theirs);
      const v1 = { ...pending(), id: theirs.id };
      if (how.startsWith('alone')) await catchUpPayout(db, charged(v1));
      else {
        const { ref } = await claimFor(v1);
        await markIdempotencyKeyRecorded(db, ref, charged(v1));
      }
      expect(await row(theirs.id)).toMatchObject({ version: 1, pix_copy_paste: '' });
    });
  });

  it('a holder overtaken by a takeover: its record is a no-op (false), its catch-up still brings the row up', async () => {
    const v1 = pending();
    await write(v1);
    const { key, ref } = await claimFor(v1);
    await db.query(
      `UPDATE idempotency_keys SET lease_until = now() - interval '1 millisecond' WHERE partner_id = $1 AND key = $2`,
      [partnerId, key],
    );
    const takeover = await claimIdempotencyKey(db, {
      partnerId,
      key,
      newPayoutId: randomUUID(),
      newWorkflowId: 'unused',
      ttlSeconds: 24 * 60 * 60,
      leaseSeconds: CLAIM_LEASE_SECONDS,
    });
    expect(takeover).toMatchObject({ kind: 'claimed', resumed: true, payoutId: v1.id });
    expect(await markIdempotencyKeyRecorded(db, ref, charged(v1))).toBe(false);
    expect(await keyState(key)).toBe('claimed');
    expect(await row(v1.id)).toMatchObject({ version: 2, pix_copy_paste: '000201-payable' });
  });

  it('the record and the catch-up are one statement: a catch-up that fails leaves the key unrecorded', async () => {
    // Another payout already holds the payment event this answer names (payouts_payment_event_idx):
    // the catch-up fails, and with it the record.
    const eventId = `evt-${randomUUID()}`;
    const holder = pending();
    await write(transition(charged(holder), 'PROCESSING', at(2), { paymentEventId: eventId }));
    const v1 = pending();
    await write(v1);
    const { key, ref } = await claimFor(v1);
    await expect(
      markIdempotencyKeyRecorded(
        db,
        ref,
        transition(charged(v1), 'PROCESSING', at(3), { paymentEventId: eventId }),
      ),
    ).rejects.toThrow(/payouts_payment_event_idx/);
    expect(await keyState(key)).toBe('claimed');
    expect(await row(v1.id)).toMatchObject({ status: 'PENDING', version: 1 });
    // Written together once the catch-up can be.
    expect(await markIdempotencyKeyRecorded(db, ref, charged(v1))).toBe(true);
    expect(await keyState(key)).toBe('recorded');
    expect(await row(v1.id)).toMatchObject({ version: 2, pix_copy_paste: '000201-payable' });
  });
});
