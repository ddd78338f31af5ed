import type { PayoutResponse } from '../../src/domain/payout';
import { payoutWorkflowId } from '../../src/workflows/payout.contract';
import { expectNoneWaitingUnflagged, openWaitingAttention } from '../support/payout-invariants';
import { useStack } from '../support/stack';
import { until } from '../support/until';

// The money rule at its two unknowns, black-box on real servers (Temporal dev server, PostgreSQL,
// anvil, the sandbox over HTTP, the api and a worker): an unknown is never a verdict. A transfer
// not mined by the settlement deadline leaves the payout PROCESSING with an attention item until the
// chain proves it; a charge status unreadable at expiry leaves it PENDING until it can be read.
// Both limits are the smallest config allows (60 s), so each case runs about a minute and a half in
// real time. Every wait is on an observable event; nothing asserts a duration.

const LIMITS = { chargeExpirySeconds: 60, settlementTimeoutSeconds: 60 };

describe('settlement unknowns (real servers, api and worker, 60 s limits)', () => {
  const stack = useStack({
    proxyProvider: true,
    env: {
      SETTLEMENT_TIMEOUT_SECONDS: String(LIMITS.settlementTimeoutSeconds),
      PIX_CHARGE_EXPIRY_SECONDS: String(LIMITS.chargeExpirySeconds),
    },
  });
  let apiKey: string;
  let partnerId: string;

  beforeAll(async () => {
    ({ apiKey, partnerId } = await stack.createPartner());
  });

  const create = () => stack.createPayout(apiKey);

  /** The partner's view; throws if the payout reached a status other than the one it must hold. */
  async function holds(id: string, status: string): Promise<PayoutResponse> {
    const res = await fetch(`${stack.apiUrl}/v1/payouts/${id}`, { headers: { 'x-api-key': apiKey } });
    const body = (await res.json()) as PayoutResponse;
    if (res.status !== 200 || body.status !== status) {
      throw new Error(`payout ${id} left ${status}: ${res.status} ${JSON.stringify(body)}`);
    }
    return body;
  }

  const readModel = async (id: string) =>
    (
      await stack.db.query<{ status: string; failure_reason: string | null }>(
        'SELECT status, failure_reason FROM payouts WHERE id = $1',
        [id],
      )
    ).rows[0];
  const refundCases = async (id: string) =>
    (await stack.db.query('SELECT 1 FROM refund_cases WHERE payout_id = $1', [id])).rowCount;

  /** Attempts of the payout's activity `type` still pending (retrying) in Temporal, 0 when none. */
  async function pendingAttempts(id: string, type: string): Promise<number> {
    const { raw } = await stack.temporal.workflow.getHandle(payoutWorkflowId(id)).describe();
    const pending = (raw.pendingActivities ?? []).find((a) => a.activityType?.name === type);
    return pending?.attempt ?? 0;
  }

  it('a transfer unmined past the deadline: PROCESSING with settlement_overdue, then COMPLETED once mined', async () => {
    const { payout, receiver } = await create();
    // The sandbox broadcasts the transfer right after the payment; with automine off it sits in the
    // pool, so the provider can neither report it nor see it fail, and the chain proves nothing.
    await stack.chain.setAutomine(false);
    await stack.pay(payout.pix_copy_paste);
    const txHash = await until(
      'the sandbox transfer in the pool',
      () => stack.chain.pendingFrom(stack.sandboxWallet),
      {
        timeoutMs: 30_000,
      },
    );

    // The deadline passes: an attention item names the payout, which stays PROCESSING.
    const overdue = await until(
      'settlement_overdue raised',
      async () => {
        await holds(payout.id, 'PROCESSING');
        const { rows } = await stack.db.query<{ detail: string; raised_at: Date }>(
          `SELECT detail, raised_at FROM payout_attention
            WHERE payout_id = $1 AND kind = 'settlement_overdue' AND cleared_at IS NULL`,
          [payout.id],
        );
        return rows[0];
      },
      { timeoutMs: LIMITS.settlementTimeoutSeconds * 1000 + 60_000, intervalMs: 250 },
    );
    expect(overdue.detail).toMatch(/still verifying/);
    expect(await readModel(payout.id)).toEqual({ status: 'PROCESSING', failure_reason: null });
    await expectNoneWaitingUnflagged(stack.db, LIMITS, undefined, partnerId);

    // Well past it: the worker checks the chain again after the item was raised, finds the transfer
    // still unmined, and keeps the payout PROCESSING (no verdict at the deadline).
    const attemptsAtDeadline = await pendingAttempts(payout.id, 'verifyUsdtTransfer');
    await until(
      'a verification after the deadline',
      async () => {
        await holds(payout.id, 'PROCESSING');
        return (await pendingAttempts(payout.id, 'verifyUsdtTransfer')) > attemptsAtDeadline
          ? true
          : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    expect(await stack.chain.rpc('eth_getTransactionReceipt', [txHash])).toBeNull();
    expect(await readModel(payout.id)).toEqual({ status: 'PROCESSING', failure_reason: null });

    // Mined at last: the next verification proves it.
    await stack.chain.setAutomine(true);
    await stack.chain.mine();
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED'], 180_000);
    expect(done).toMatchObject({ status: 'COMPLETED', blockchain_tx_id: txHash });
    expect(await stack.chain.transfersTo(receiver)).toEqual({
      count: 1,
      total: 17_825_311n,
      txHashes: [txHash],
    });
    expect(await refundCases(payout.id)).toBe(0);
    // The item is answered by the proof: cleared by the workflow, nothing left open.
    await until(
      'the read model COMPLETED',
      async () => ((await readModel(payout.id))?.status === 'COMPLETED' ? true : undefined),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const { rows: items } = await stack.db.query<{ kind: string; cleared_by: string | null }>(
      'SELECT kind, cleared_by FROM payout_attention WHERE payout_id = $1',
      [payout.id],
    );
    expect(items).toEqual([{ kind: 'settlement_overdue', cleared_by: 'payout COMPLETED' }]);
    expect(await openWaitingAttention(stack.db, payout.id)).toEqual([]);
  }, 360_000);

  it('a charge status unreadable at expiry: PENDING past expiry (not FAILED), then COMPLETED once read', async () => {
    const { payout, receiver } = await create();
    // The status endpoint answers 503 for as long as the test wants; the payment's webhook is lost,
    // so only that status can tell the payout it was paid.
    const fault = await fetch(`${stack.sandboxUrl}/sandbox/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ route: 'GET /pix/charges/{charge_id}', status: 503, count: 10_000 }),
    });
    expect(fault.status).toBe(201);
    await stack.payWith(payout.pix_copy_paste, { notify: false });
    const paidBy = Date.now();

    // Expiry: the charge is removed (refused: it was paid) and its status read, which fails, again.
    const statusReads = () => stack.providerProxy!.requests().get('GET /pix/charges') ?? 0;
    await until(
      'two failed status reads after expiry',
      async () => {
        await holds(payout.id, 'PENDING');
        return statusReads() >= 2 ? true : undefined;
      },
      { timeoutMs: LIMITS.chargeExpirySeconds * 1000 + 60_000, intervalMs: 250 },
    );
    const pending = await holds(payout.id, 'PENDING');
    expect(Date.now()).toBeGreaterThan(Date.parse(pending.created_at) + LIMITS.chargeExpirySeconds * 1000);
    expect(await readModel(payout.id)).toEqual({ status: 'PENDING', failure_reason: null });
    expect(await refundCases(payout.id)).toBe(0);
    // Within ATTENTION_AFTER_MS (5 minutes of real time here) no item is due yet; the condition holds.
    await expectNoneWaitingUnflagged(stack.db, LIMITS, undefined, partnerId);

    // The provider answers again: the payment made before expiry is found and settled.
    expect((await fetch(`${stack.sandboxUrl}/sandbox/faults`, { method: 'DELETE' })).status).toBe(200);
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED'], 180_000);
    expect(done.status).toBe('COMPLETED');
    expect(Date.parse(done.paid_at!)).toBeLessThanOrEqual(paidBy);
    const transfers = await stack.chain.transfersTo(receiver);
    expect(transfers).toEqual({ count: 1, total: 17_825_311n, txHashes: [done.blockchain_tx_id] });
    expect(await refundCases(payout.id)).toBe(0);
    expect(await openWaitingAttention(stack.db, payout.id)).toEqual([]);
    expect(stack.providerProxy!.chargesCreated().get(payout.id)).toBe(1);
  }, 360_000);
});
