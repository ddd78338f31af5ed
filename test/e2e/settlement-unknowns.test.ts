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
//
// The two cases wait out their minute at the same time: the second starts in beforeAll and runs
// while the first does; its test awaits it. Each has a partner of its own (the unflagged check reads
// only its own payouts). They share the chain, whose automine the first turns off: the second's
// transfer is only sent once its charge status can be read again, and that waits until the first
// has found its own transfer in the pool (the only one of the sandbox's wallet there then); once
// sent, the second's transfer is mined when the first turns automine back on.

const LIMITS = { chargeExpirySeconds: 60, settlementTimeoutSeconds: 60 };

describe('settlement unknowns (real servers, api and worker, 60 s limits)', () => {
  const stack = useStack({
    proxyProvider: true,
    env: {
      SETTLEMENT_TIMEOUT_SECONDS: String(LIMITS.settlementTimeoutSeconds),
      PIX_CHARGE_EXPIRY_SECONDS: String(LIMITS.chargeExpirySeconds),
    },
  });
  /** The partner of each case. */
  let unmined: { apiKey: string; partnerId: string };
  let unreadable: { apiKey: string; partnerId: string };
  /** Opened by the first case once its transfer was found in the pool (or once it ended): the second may settle. */
  let openPool!: () => void;
  const poolSeen = new Promise<void>((resolve) => (openPool = resolve));
  /** The second case, started in beforeAll. */
  let unreadableCase: Promise<void>;

  beforeAll(async () => {
    unmined = await stack.createPartner();
    unreadable = await stack.createPartner();
    unreadableCase = chargeStatusUnreadable();
    // Awaited in its own test; until then a failure must not count as unhandled.
    unreadableCase.catch(() => {});
  });

  /** The partner's view; throws if the payout reached a status other than the one it must hold. */
  async function holds(apiKey: string, id: string, status: string): Promise<PayoutResponse> {
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
  const chargeIdOf = async (id: string) =>
    (
      await stack.db.query<{ provider_charge_id: string }>(
        'SELECT provider_charge_id FROM payouts WHERE id = $1',
        [id],
      )
    ).rows[0]!.provider_charge_id;

  /** Attempts of the payout's activity `type` still pending (retrying) in Temporal, 0 when none. */
  async function pendingAttempts(id: string, type: string): Promise<number> {
    const { raw } = await stack.temporal.workflow.getHandle(payoutWorkflowId(id)).describe();
    const pending = (raw.pendingActivities ?? []).find((a) => a.activityType?.name === type);
    return pending?.attempt ?? 0;
  }

  it('a transfer unmined past the deadline: PROCESSING with settlement_overdue, then COMPLETED once mined', async () => {
    const { apiKey, partnerId } = unmined;
    try {
      const { payout, receiver } = await stack.createPayout(apiKey);
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
      openPool();

      // The deadline passes: an attention item names the payout, which stays PROCESSING.
      const overdue = await until(
        'settlement_overdue raised',
        async () => {
          await holds(apiKey, payout.id, 'PROCESSING');
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
          await holds(apiKey, payout.id, 'PROCESSING');
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
    } finally {
      // Whatever happened, the other case's transfer is not held up (a no-op once done).
      openPool();
      await stack.chain.setAutomine(true);
    }
  }, 360_000);

  /** The second case, started in beforeAll: its minute runs while the first case's does. */
  async function chargeStatusUnreadable(): Promise<void> {
    const { apiKey, partnerId } = unreadable;
    const { payout, receiver } = await stack.createPayout(apiKey);
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
    const statusPath = `GET /pix/charges/${await chargeIdOf(payout.id)}`;
    const statusReads = () => stack.providerProxy!.pathRequests().get(statusPath) ?? 0;
    await until(
      'two failed status reads after expiry',
      async () => {
        await holds(apiKey, payout.id, 'PENDING');
        return statusReads() >= 2 ? true : undefined;
      },
      { timeoutMs: LIMITS.chargeExpirySeconds * 1000 + 60_000, intervalMs: 250 },
    );
    const pending = await holds(apiKey, payout.id, 'PENDING');
    expect(Date.now()).toBeGreaterThan(Date.parse(pending.created_at) + LIMITS.chargeExpirySeconds * 1000);
    expect(await readModel(payout.id)).toEqual({ status: 'PENDING', failure_reason: null });
    expect(await refundCases(payout.id)).toBe(0);
    // Within ATTENTION_AFTER_MS (5 minutes of real time here) no item is due yet; the condition holds.
    await expectNoneWaitingUnflagged(stack.db, LIMITS, undefined, partnerId);

    // The provider answers again: the payment made before expiry is found and settled (its transfer
    // sent only once the first case has found its own in the pool).
    await poolSeen;
    expect((await fetch(`${stack.sandboxUrl}/sandbox/faults`, { method: 'DELETE' })).status).toBe(200);
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED'], 180_000);
    expect(done.status).toBe('COMPLETED');
    expect(Date.parse(done.paid_at!)).toBeLessThanOrEqual(paidBy);
    const transfers = await stack.chain.transfersTo(receiver);
    expect(transfers).toEqual({ count: 1, total: 17_825_311n, txHashes: [done.blockchain_tx_id] });
    expect(await refundCases(payout.id)).toBe(0);
    expect(await openWaitingAttention(stack.db, payout.id)).toEqual([]);
    expect(stack.providerProxy!.chargesCreated().get(payout.id)).toBe(1);
  }

  it('a charge status unreadable at expiry: PENDING past expiry (not FAILED), then COMPLETED once read', async () => {
    // The first case has ended (or was not run): nothing holds this one back.
    openPool();
    await unreadableCase;
  }, 360_000);
});
