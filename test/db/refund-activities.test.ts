import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { buildSandboxApp } from '../../dev/sandbox/app';
import { loadSandboxConfig } from '../../dev/sandbox/config';
import { createPayoutBookkeepingActivities } from '../../src/activities/payout-bookkeeping.activities';
import { createRefundActivities, REFUND_HELD } from '../../src/activities/refund.activities';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { findRefundCase, openRefundCase, resolveRefundCase } from '../../src/adapters/db/refund-cases-repo';
import { createHttpProvider } from '../../src/adapters/provider/http-provider';
import type { PaymentProvider } from '../../src/adapters/provider/types';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { createPartner } from '../../src/adapters/db/partners-repo';
import { upsertPayout } from '../../src/adapters/db/payouts-repo';
import { testDatabaseUrl } from '../support/env';
import { completedPayout } from '../support/payouts';

// The refund activities on the real PostgreSQL and the real provider sandbox (over HTTP): the policy,
// the claim before the provider is asked, the provider's answers recorded, and an unknown (a failed
// call, a 404 on the status) never taken for a refusal (docs/decisions.md D33, D62); and no return for
// a case whose payout got a settlement report after its end (D85), whatever its kind or when it came.

describe('refund activities (PostgreSQL, provider sandbox)', () => {
  let db: Db;
  let sandbox: FastifyInstance;
  let baseUrl: string;
  let provider: PaymentProvider;

  beforeAll(async () => {
    db = createPool(testDatabaseUrl(), 2);
    sandbox = buildSandboxApp(
      loadSandboxConfig({
        SANDBOX_PORT: '0',
        SANDBOX_WEBHOOK_URL: 'http://127.0.0.1:9/unused',
        SANDBOX_LOG_LEVEL: 'silent',
      }),
      { returnDelayMs: 100 },
    );
    baseUrl = await sandbox.listen({ host: '127.0.0.1', port: 0 });
    provider = createHttpProvider({ baseUrl, timeoutMs: 5_000 });
  });
  afterAll(async () => {
    await sandbox?.close();
    await db?.end();
  });

  const activities = (autoReturnKinds: string[] = ['wrong_amount']) =>
    createRefundActivities({
      db,
      returns: provider,
      policy: { autoReturnKinds },
      logger: createLogger({ level: 'silent', name: 'test' }),
      metrics: createMetrics(),
    });

  const control = (path: string, body: unknown) =>
    fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  /** A payment of 100.00 BRL at the sandbox, and its refund case of `kind`. */
  async function paidCase(kind: string): Promise<{ caseId: string; eventId: string; payoutId: string }> {
    const payoutId = randomUUID();
    const charge = await provider.createCharge({
      externalId: payoutId,
      amountCentavos: 10_000n,
      payerPixKey: '12345678901',
      payerPixKeyType: 'CPF',
      expiresInSeconds: 3600,
    });
    const paid = await control('/sandbox/payments', { pix_copy_paste: charge.pixCopyPaste, notify: false });
    const { event_id: eventId } = (await paid.json()) as { event_id: string };
    const opened = await openRefundCase(db, {
      eventId,
      payoutId,
      chargeId: charge.chargeId,
      amountBrl: '100.00',
      reason: 'test',
      kind,
    });
    if (opened.outcome !== 'opened') throw new Error(`case not opened: ${opened.outcome}`);
    return { caseId: opened.caseId, eventId, payoutId };
  }

  const statusOf = async (caseId: string) => (await findRefundCase(db, caseId))?.status;

  /** What the sandbox's payers got back for this payment. */
  const returnsFor = async (eventId: string) =>
    (
      (await (await fetch(`${baseUrl}/sandbox/returns`)).json()) as { returns: { end_to_end_id: string }[] }
    ).returns.filter((r) => r.end_to_end_id === eventId);

  /** The provider reports USDT sent for the payout after it ended FAILED, as the worker records it. */
  async function settledAfterEnd(payoutId: string): Promise<string> {
    const txHash = `0x${randomUUID().replace(/-/g, '')}${randomUUID().replace(/-/g, '')}` as const;
    await createPayoutBookkeepingActivities({
      db,
      logger: createLogger({ level: 'silent', name: 'test' }),
      metrics: createMetrics(),
    }).alertLateSettlement({
      payoutId,
      status: 'FAILED',
      event: {
        type: 'settlement.completed',
        eventId: `evt_${randomUUID().slice(0, 12)}`,
        chargeId: 'chg_late',
        externalId: payoutId,
        occurredAt: '2026-12-01T10:00:00.000Z',
        txHash,
        amountUsdt: '18.000000',
        chainId: 42161,
        confirmedAt: '2026-12-01T10:00:00.000Z',
      },
    });
    return txHash;
  }

  const changesOf = async (caseId: string) =>
    (
      await db.query<{ status: string; detail: string | null }>(
        'SELECT status, detail FROM refund_case_changes WHERE case_id = $1 ORDER BY changed_at, status',
        [caseId],
      )
    ).rows;

  async function untilFinal(refund: ReturnType<typeof activities>, caseId: string) {
    for (let i = 0; i < 50; i++) {
      const now = await refund.checkReturn(caseId);
      if (now !== 'returning') return now;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('still returning');
  }

  it('the policy: a kind it lists returns at once, another waits for approval', async () => {
    const refund = activities(['wrong_amount']);
    const auto = await paidCase('wrong_amount');
    expect(await refund.beginRefund(auto.caseId)).toBe('return');
    expect(await statusOf(auto.caseId)).toBe('open');
    const waits = await paidCase('wrong_charge');
    expect(await refund.beginRefund(waits.caseId)).toBe('awaiting_approval');
    expect(await refund.beginRefund(waits.caseId)).toBe('awaiting_approval');
    expect(await refund.approveRefund({ caseId: waits.caseId, by: 'ana' })).toBe('returning');
    expect(await findRefundCase(db, waits.caseId)).toMatchObject({ status: 'returning', approvedBy: 'ana' });
  });

  it('a failed request leaves the case claimed and returning; asked again, one return, recorded to the end', async () => {
    const refund = activities();
    const { caseId, eventId } = await paidCase('wrong_amount');
    await control('/sandbox/faults', { route: 'POST /pix/returns', status: 503, count: 1 });
    await expect(refund.requestReturn(caseId)).rejects.toMatchObject({ type: 'ProviderUnavailable' });
    expect(await findRefundCase(db, caseId)).toMatchObject({ status: 'returning', returnId: null });
    // An operator cannot resolve it by hand while money may be on its way.
    expect((await resolveRefundCase(db, caseId, 'by hand'))?.status).toBe('returning');

    expect(await refund.requestReturn(caseId)).toBe('returning');
    const recorded = await findRefundCase(db, caseId);
    expect(recorded?.returnId).toMatch(/^rtn_/);
    // A status read answered 404 is no refusal.
    await control('/sandbox/faults', { route: 'GET /pix/returns/{return_id}', status: 404, count: 1 });
    await expect(refund.checkReturn(caseId)).rejects.toMatchObject({ type: 'ProviderUnavailable' });
    expect(await statusOf(caseId)).toBe('returning');

    expect(await untilFinal(refund, caseId)).toBe('returned');
    expect(await refund.requestReturn(caseId)).toBe('returned');
    const returns = (await (await fetch(`${baseUrl}/sandbox/returns`)).json()) as {
      returns: { end_to_end_id: string }[];
    };
    expect(returns.returns.filter((r) => r.end_to_end_id === eventId)).toHaveLength(1);
    const { rows } = await db.query<{ status: string }>(
      'SELECT status FROM refund_case_changes WHERE case_id = $1 ORDER BY changed_at',
      [caseId],
    );
    expect(rows.map((r) => r.status)).toEqual(['open', 'returning', 'returned']);
  });

  it("the provider's refusal is recorded with its reason; the case can then be resolved by hand", async () => {
    const refund = activities();
    const { caseId } = await paidCase('wrong_amount');
    await control('/sandbox/returns/refuse', { count: 1 });
    expect(await refund.requestReturn(caseId)).toBe('returning');
    expect(await untilFinal(refund, caseId)).toBe('refused');
    expect(await findRefundCase(db, caseId)).toMatchObject({
      status: 'refused',
      refusalReason: expect.stringContaining('refused'),
    });
    expect((await resolveRefundCase(db, caseId, 'returned by TED'))?.status).toBe('resolved');
  });

  it('a case resolved by hand before its return was asked for is never returned', async () => {
    const refund = activities();
    const { caseId, eventId } = await paidCase('wrong_amount');
    expect((await resolveRefundCase(db, caseId, 'returned by hand'))?.status).toBe('resolved');
    expect(await refund.requestReturn(caseId)).toBe('resolved');
    expect(await refund.beginRefund(caseId)).toBe('finished');
    const returns = (await (await fetch(`${baseUrl}/sandbox/returns`)).json()) as {
      returns: { end_to_end_id: string }[];
    };
    expect(returns.returns.filter((r) => r.end_to_end_id === eventId)).toEqual([]);
  });

  it('a kind the policy returns is held when its payout got a settlement report after its end; never returned', async () => {
    const refund = activities(['wrong_amount']);
    const { caseId, eventId, payoutId } = await paidCase('wrong_amount');
    const txHash = await settledAfterEnd(payoutId);
    expect(await refund.beginRefund(caseId)).toBe('awaiting_approval');
    expect(await findRefundCase(db, caseId)).toMatchObject({ status: 'awaiting_approval', approvedBy: null });
    expect(await changesOf(caseId)).toEqual([
      { status: 'open', detail: 'test' },
      {
        status: 'awaiting_approval',
        detail: expect.stringMatching(new RegExp(`^held: .*18\\.000000 USDT sent in ${txHash}`)),
      },
    ]);
    // An approval that got past the CLI is not taken, and the return step holds the case.
    expect(await refund.approveRefund({ caseId, by: 'ana' })).toBe('awaiting_approval');
    await expect(refund.requestReturn(caseId)).rejects.toMatchObject({
      type: REFUND_HELD,
      message: expect.stringContaining(txHash),
    });
    expect(await findRefundCase(db, caseId)).toMatchObject({ status: 'awaiting_approval', approvedBy: null });
    expect(await returnsFor(eventId)).toEqual([]);
    // An operator who checked the chain resolves it by hand; its workflow then ends.
    expect((await resolveRefundCase(db, caseId, 'USDT delivered'))?.status).toBe('resolved');
    expect(await refund.requestReturn(caseId)).toBe('resolved');
    expect(await returnsFor(eventId)).toEqual([]);
  });

  it('a report that comes after the policy said return: the claim refuses the case, which is held', async () => {
    const refund = activities(['wrong_amount']);
    const { caseId, eventId, payoutId } = await paidCase('wrong_amount');
    expect(await refund.beginRefund(caseId)).toBe('return');
    const txHash = await settledAfterEnd(payoutId);
    await expect(refund.requestReturn(caseId)).rejects.toMatchObject({ type: REFUND_HELD });
    expect(await statusOf(caseId)).toBe('awaiting_approval');
    expect((await changesOf(caseId)).at(-1)?.detail).toContain(txHash);
    // Retried, it stays held: still nothing asked of the provider.
    await expect(refund.requestReturn(caseId)).rejects.toMatchObject({ type: REFUND_HELD });
    expect(await changesOf(caseId)).toHaveLength(2);
    expect(await returnsFor(eventId)).toEqual([]);
  });

  it('a report for another payout holds nothing', async () => {
    const refund = activities(['wrong_amount']);
    const { caseId } = await paidCase('wrong_amount');
    await settledAfterEnd(randomUUID());
    expect(await refund.beginRefund(caseId)).toBe('return');
    expect(await refund.requestReturn(caseId)).toBe('returning');
    expect(await statusOf(caseId)).toBe('returning');
  });

  it('a case whose payment settled its payout (a run before a reset opened it) is resolved, never returned', async () => {
    const refund = activities(['wrong_amount']);
    const { partner } = await createPartner(db, 'refund after reset');
    const completedWith = async (c: { payoutId: string; eventId: string }) =>
      upsertPayout(
        db,
        completedPayout({ id: c.payoutId, partnerId: partner.id, paymentEventId: c.eventId }),
        `payout-${c.payoutId}`,
        'after-reset',
      );
    // The new run completed before the case's workflow applied the policy.
    const before = await paidCase('wrong_amount');
    await completedWith(before);
    expect(await refund.beginRefund(before.caseId)).toBe('finished');
    expect(await findRefundCase(db, before.caseId)).toMatchObject({
      status: 'resolved',
      resolutionNote: expect.stringContaining(`settled payout ${before.payoutId} (COMPLETED)`),
    });
    // Awaiting approval when the new run completed: the approval is not taken, the case resolved.
    const waiting = await paidCase('wrong_charge');
    expect(await refund.beginRefund(waiting.caseId)).toBe('awaiting_approval');
    await completedWith(waiting);
    expect(await refund.approveRefund({ caseId: waiting.caseId, by: 'ana' })).toBe('resolved');
    // Policy said return, then the new run completed: the claim refuses, the return step resolves it.
    const claimed = await paidCase('wrong_amount');
    expect(await refund.beginRefund(claimed.caseId)).toBe('return');
    await completedWith(claimed);
    expect(await refund.requestReturn(claimed.caseId)).toBe('resolved');
    // Waiting for approval, its hourly look resolves it too.
    const looked = await paidCase('wrong_charge');
    expect(await refund.beginRefund(looked.caseId)).toBe('awaiting_approval');
    await completedWith(looked);
    expect(await refund.refundCaseStatus(looked.caseId)).toBe('resolved');
    for (const c of [before, waiting, claimed, looked]) expect(await returnsFor(c.eventId)).toEqual([]);
  });

  it('without a provider that returns, a case is left to an operator', async () => {
    const refund = createRefundActivities({
      db,
      policy: { autoReturnKinds: ['wrong_amount'] },
      logger: createLogger({ level: 'silent', name: 'test' }),
      metrics: createMetrics(),
    });
    const { caseId } = await paidCase('wrong_amount');
    expect(await refund.beginRefund(caseId)).toBe('left_to_operator');
    expect(await statusOf(caseId)).toBe('open');
  });
});
