import { randomUUID } from 'node:crypto';
import { createPartner } from '../../src/adapters/db/partners-repo';
import { upsertPayout } from '../../src/adapters/db/payouts-repo';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { openRefundCase } from '../../src/adapters/db/refund-cases-repo';
import { amend, transition, type PayoutRecord } from '../../src/domain/payout';
import { testDatabaseUrl } from '../support/env';
import { pendingPayout } from '../support/payouts';

// The read model's ordering rule on the real PostgreSQL (docs/decisions.md): within a run the higher
// version wins, except that a terminal status supersedes a non-terminal one whatever the versions (a
// redone workflow task may decide the end at a version its dead attempt already wrote); a newer run
// (an operator's reset) wins; the api's copy (no run start) follows the version rule. And the refund
// cases' side of it: only a COMPLETED payout's payment is "the one it settles".

const WORKFLOW_ID = 'payout-test';

describe('payouts read model (upsertPayout) and refund cases', () => {
  let db: Db;
  let partnerId: string;

  beforeAll(async () => {
    db = createPool(testDatabaseUrl(), 2);
    partnerId = (await createPartner(db, 'read model')).partner.id;
  });
  afterAll(() => db?.end());

  const pending = (): PayoutRecord => pendingPayout({ partnerId });
  const at = (minute: number) => `2026-11-21T22:${String(minute).padStart(2, '0')}:00.000Z`;
  const withCode = (p: PayoutRecord) =>
    amend(p, at(1), { pixCopyPaste: '000201-payable', providerChargeId: 'chg_first' });

  async function row(id: string) {
    const { rows } = await db.query<{
      status: string;
      version: number;
      pix_copy_paste: string;
      failure_reason: string | null;
      run_id: string;
    }>('SELECT status, version, pix_copy_paste, failure_reason, run_id FROM payouts WHERE id = $1', [id]);
    return rows[0]!;
  }
  const write = (p: PayoutRecord, runId = 'run-1') => upsertPayout(db, p, WORKFLOW_ID, runId);

  test("a redone task's writes in the order the kill test sees them: the row ends FAILED, no payable code", async () => {
    // Dead attempt: PENDING v1, PENDING v2 with the pay code. Redo: PENDING v1 again, then FAILED v2.
    const v1 = pending();
    const v2 = withCode(v1);
    const failed = transition(v1, 'FAILED', at(2), { failureReason: 'charge_creation_failed' });
    expect(failed.version).toBe(v2.version);
    for (const p of [v1, v2, v1, failed]) await write(p);
    expect(await row(v1.id)).toMatchObject({
      status: 'FAILED',
      version: 2,
      pix_copy_paste: '',
      failure_reason: 'charge_creation_failed',
    });
  });

  test('FAILED at the same version supersedes PENDING', async () => {
    const v1 = pending();
    const v2 = withCode(v1);
    const failed = transition(v1, 'FAILED', at(2), { failureReason: 'cancelled' });
    expect(failed.version).toBe(v2.version);
    await write(v2);
    await write(failed);
    expect(await row(v1.id)).toMatchObject({ status: 'FAILED', version: 2, failure_reason: 'cancelled' });
  });

  test('a PENDING of a higher version never overwrites FAILED of the same run', async () => {
    const v1 = pending();
    await write(transition(v1, 'FAILED', at(2), { failureReason: 'charge_creation_failed' }));
    await write(amend(withCode(v1), at(3), {}));
    expect(await row(v1.id)).toMatchObject({ status: 'FAILED', version: 2, pix_copy_paste: '' });
  });

  test("another run's later decision wins even with a lower version; the older run's earlier one then loses", async () => {
    const v1 = pending();
    const failed = transition(withCode(v1), 'FAILED', at(3), { failureReason: 'charge_expired' });
    await write(failed);
    // An operator's reset: the new run's versions restart from the reset point, its decisions are later.
    await write({ ...v1, updatedAt: at(5) }, 'run-2');
    expect(await row(v1.id)).toMatchObject({ status: 'PENDING', version: 1, run_id: 'run-2' });
    // A late write of the old run (an attempt that outlived the reset), decided before it.
    await write(amend(failed, at(4), {}), 'run-1');
    expect(await row(v1.id)).toMatchObject({ status: 'PENDING', version: 1, run_id: 'run-2' });
  });

  test("the api's copy (same run) follows the version rule", async () => {
    const v1 = pending();
    const v2 = withCode(v1);
    await write(v2);
    await write(v1);
    expect(await row(v1.id)).toMatchObject({
      status: 'PENDING',
      version: 2,
      pix_copy_paste: '000201-payable',
    });
    const v3 = transition(v2, 'PROCESSING', at(5), { paidAt: at(5), paymentEventId: 'evt_a' });
    await write(v3);
    expect(await row(v1.id)).toMatchObject({ status: 'PROCESSING', version: 3, run_id: 'run-1' });
  });

  describe('openRefundCase: only a COMPLETED payout settles its payment', () => {
    const refund = (payoutId: string, eventId: string) =>
      openRefundCase(db, {
        eventId,
        payoutId,
        chargeId: 'chg_first',
        amountBrl: '100.00',
        reason: 'test',
        kind: 'wrong_charge',
      }).then((r) => r.outcome);

    test('PROCESSING naming payment A (a redone local write) and the workflow refunds A: the case opens', async () => {
      const eventA = `evt_${randomUUID()}`;
      const processing = transition(withCode(pending()), 'PROCESSING', at(5), {
        paidAt: at(5),
        paymentEventId: eventA,
      });
      await write(processing);
      expect(await refund(processing.id, eventA)).toBe('opened');
      expect(await refund(processing.id, eventA)).toBe('already_open');
    });

    test('COMPLETED with payment A: a redelivered A opens no case', async () => {
      const eventA = `evt_${randomUUID()}`;
      const processing = transition(withCode(pending()), 'PROCESSING', at(5), {
        paidAt: at(5),
        paymentEventId: eventA,
      });
      await write(
        transition(processing, 'COMPLETED', at(6), {
          blockchainTxId: `0x${'ab'.repeat(32)}`,
          settledAmountUsdtUnits: '17152658',
          confirmedAt: at(6),
        }),
      );
      expect(await refund(processing.id, eventA)).toBe('payment_settles_its_payout');
      const { rowCount } = await db.query('SELECT 1 FROM refund_cases WHERE event_id = $1', [eventA]);
      expect(rowCount).toBe(0);
    });
  });
});
