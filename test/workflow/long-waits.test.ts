import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { PayoutRecord } from '../../src/domain/payout';
import { transition } from '../../src/domain/payout';
import {
  beginProviderSettlement,
  evolve,
  type ProviderSettlementFact,
} from '../../src/domain/provider-settlement-knowledge';
import { HAND_OVER_AT_EVENTS } from '../../src/workflows/hand-over';
import type { PayoutHandOver } from '../../src/workflows/payout/handed-over';
import type { Payment } from '../../src/workflows/payout/payment-inbox';
import { payoutWorkflow } from '../../src/workflows/payout.workflow';
import {
  getPayoutQuery,
  openingRecord,
  payoutWorkflowId,
  providerEventSignal,
  resolvePayoutUpdate,
} from '../../src/workflows/payout.contract';
import { approveRefundUpdate, refundWorkflowId } from '../../src/workflows/refund.contract';
import { refundWorkflow } from '../../src/workflows/refund.workflow';
import {
  CHARGE_ID,
  fakeActivities,
  isolatedWorker,
  statusNamingTx,
  treasuryBlocked,
  payoutInput,
  pixReceived,
  settlementCompleted,
  startPayout,
  TREASURY_TX_HASH,
  TX_HASH,
  useTimeSkippingEnv,
  waitForPayout,
  withWorker,
} from './harness';

// Bounded histories (D87), on the time-skipping server: each of the long waits lasts 60 days of
// workflow time, the payout or refund hands over to new runs as it goes (continue-as-new), every run
// stays far below Temporal's 10,240-event warning, and the run that ends does what the first would
// have: one attention item for the whole wait, signals and queries on the current run, the same end.
const DAY_MS = 24 * 3_600_000;
const WAIT_MS = 60 * DAY_MS;
/** Temporal warns past this many events in one run (and terminates at 51,200). */
const HISTORY_WARNING = 10_240;

describe('long waits: paced, and handed over to new runs (time-skipping)', () => {
  const env = useTimeSkippingEnv();

  /** Workflow time, as the test server keeps it (an activity holds it still while it runs). */
  const clock = () => env.currentTimeMs();

  it('a treasury blocked for 60 days: one attention item, a second payment and a query on the current run, then COMPLETED', async () => {
    let since: number | undefined;
    let secondPaymentSent = false;
    let midWait: PayoutRecord | undefined;
    const input = payoutInput({ settlementMode: 'treasury' });
    const handle = () => env.client.workflow.getHandle(payoutWorkflowId(input.payoutId));
    const fake = fakeActivities({
      sendTreasuryTransfer: async () => {
        const now = await clock();
        since ??= now;
        if (now - since > 20 * DAY_MS && !secondPaymentSent) {
          secondPaymentSent = true;
          // A second payment and a query while the payout waits in a later run.
          await handle().signal(providerEventSignal, pixReceived(input.payoutId));
          midWait = await handle().query(getPayoutQuery);
        }
        if (now - since < WAIT_MS) {
          throw treasuryBlocked();
        }
        return { txHash: TREASURY_TX_HASH };
      },
    });
    const [started, result] = await withWorker(env, fake.activities, async (taskQueue) => {
      const h = await startPayout(env, taskQueue, input);
      await waitForPayout(h, (p) => p.pixCopyPaste !== '');
      await h.signal(providerEventSignal, pixReceived(input.payoutId));
      return [h, await handle().result()] as const;
    });

    expect(result).toMatchObject({ status: 'COMPLETED', blockchainTxId: TREASURY_TX_HASH });
    expect(midWait).toMatchObject({ status: 'PROCESSING' });
    expectBounded(await runsOf(env, started));
    // One item for the whole wait, cleared once the treasury sent; one overdue alert.
    const raised = fake.callsOf('raiseAttention').map(([a]) => (a as { kind: string }).kind);
    expect(raised.filter((k) => k === 'treasury_cannot_send')).toHaveLength(1);
    expect(fake.callsOf('alertSettlementOverdue')).toHaveLength(1);
    const cleared = fake.callsOf('clearAttention').flatMap(([a]) => (a as { kinds: string[] }).kinds);
    expect(cleared.filter((k) => k === 'treasury_cannot_send')).toHaveLength(1);
    // The second payment, signalled to a later run, became its refund case.
    expect(fake.callsOf('recordLatePayment').map(([r]) => (r as { kind: string }).kind)).toEqual([
      'second_payment',
    ]);
    // Paced: hourly looks past the first day, not rounds back to back (17,000 rounds in 60 days).
    expect(fake.callsOf('sendTreasuryTransfer').length).toBeLessThan(2_000);
    expect(fake.callsOf('confirmTreasuryTransfer')).toHaveLength(1);
  }, 300_000);

  it("a provider's transfer in mismatch for 60 days, then confirmed: COMPLETED by the run it was handed to", async () => {
    let since: number | undefined;
    const input = payoutInput();
    const fake = fakeActivities({
      fetchSettlementStatus: statusNamingTx,
      verifyUsdtTransfer: async () => {
        const now = await clock();
        since ??= now;
        return now - since < WAIT_MS ? 'mismatch' : 'confirmed';
      },
    });
    const [started, result] = await withWorker(env, fake.activities, async (taskQueue) => {
      const h = await startPayout(env, taskQueue, input);
      await waitForPayout(h, (p) => p.pixCopyPaste !== '');
      await h.signal(providerEventSignal, pixReceived(input.payoutId));
      await h.signal(providerEventSignal, settlementCompleted(input.payoutId));
      return [h, await env.client.workflow.getHandle(h.workflowId).result()] as const;
    });

    expect(result).toMatchObject({ status: 'COMPLETED', blockchainTxId: TX_HASH });
    expectBounded(await runsOf(env, started));
    const raised = fake.callsOf('raiseAttention').map(([a]) => (a as { kind: string }).kind);
    expect(raised.filter((k) => k === 'transfer_mismatch')).toHaveLength(1);
    // Looked at every 10 minutes for a day, hourly after: not 8,640 looks.
    expect(fake.callsOf('verifyUsdtTransfer').length).toBeLessThan(2_000);
  }, 300_000);

  it('a return `returning` for 60 days: read hourly past the first day, returned in a later run', async () => {
    let since: number | undefined;
    const fake = fakeActivities({
      checkReturn: async () => {
        const now = await clock();
        since ??= now;
        return now - since < WAIT_MS ? 'returning' : 'returned';
      },
    });
    const caseId = randomUUID();
    const [started, outcome] = await withWorker(env, fake.activities, async (taskQueue) => {
      const h = await env.client.workflow.start(refundWorkflow, {
        workflowId: refundWorkflowId(caseId),
        taskQueue,
        args: [{ caseId }],
      });
      return [h, await env.client.workflow.getHandle(refundWorkflowId(caseId)).result()] as const;
    });
    expect(outcome).toBe('returned');
    expectBounded(await runsOf(env, started));
    expect(fake.callsOf('requestReturn')).toHaveLength(1);
    expect(fake.callsOf('checkReturn').length).toBeLessThan(2_000);
  }, 300_000);

  // Not one of the waits that grew without bound (an hourly check), but long enough to hand over: 10 days.
  it("a case awaiting approval for 10 days: the operator's approval reaches the current run", async () => {
    const fake = fakeActivities({
      beginRefund: async () => 'awaiting_approval' as const,
      refundCaseStatus: async () => 'awaiting_approval' as const,
    });
    const caseId = randomUUID();
    const [started, outcome] = await withWorker(env, fake.activities, async (taskQueue) => {
      const started = await env.client.workflow.start(refundWorkflow, {
        workflowId: refundWorkflowId(caseId),
        taskQueue,
        args: [{ caseId }],
      });
      await env.sleep(10 * DAY_MS);
      const h = env.client.workflow.getHandle(refundWorkflowId(caseId));
      await expect(h.executeUpdate(approveRefundUpdate, { args: [{ by: 'ops' }] })).resolves.toBe(
        'returning',
      );
      return [started, await h.result()] as const;
    });
    expect(outcome).toBe('returned');
    expectBounded(await runsOf(env, started));
    expect(fake.callsOf('beginRefund')).toHaveLength(1);
    expect(fake.callsOf('approveRefund')).toHaveLength(1);
  }, 300_000);
});

describe('the first task of a handed-over run (time-skipping)', () => {
  const env = useTimeSkippingEnv();

  /**
   * Starts the run with its worker not yet polling and sends `update`, so that the run's first task
   * holds the update beside its start, as when the server retries onto the new run an update sent
   * while the earlier one closed; then lets the worker in.
   */
  async function firstTaskWith<T>(
    activities: object,
    start: (taskQueue: string) => Promise<() => Promise<T>>,
  ): Promise<T> {
    const taskQueue = `wf-test-${randomUUID().slice(0, 8)}`;
    const sent = await start(taskQueue);
    // The update reaches the server before any worker polls (it then waits in the first task).
    await new Promise((resolve) => setTimeout(resolve, 500));
    const worker = await isolatedWorker(env, taskQueue, activities);
    return worker.runUntil(sent);
  }

  it("takes a refund's approval", async () => {
    const fake = fakeActivities({ refundCaseStatus: async () => 'awaiting_approval' as const });
    const caseId = randomUUID();
    const answer = await firstTaskWith(fake.activities, async (taskQueue) => {
      const h = await env.client.workflow.start(refundWorkflow, {
        workflowId: refundWorkflowId(caseId),
        taskQueue,
        args: [{ caseId, handOver: { phase: 'awaiting_approval' } }],
      });
      const approved = h.executeUpdate(approveRefundUpdate, { args: [{ by: 'ops' }] });
      return async () => {
        const status = await approved;
        await h.result();
        return status;
      };
    });
    expect(answer).toBe('returning');
    expect(fake.callsOf('beginRefund')).toHaveLength(0);
  }, 60_000);

  it("takes an operator's decision on a payout waiting on a transfer in mismatch", async () => {
    const fake = fakeActivities({
      fetchSettlementStatus: statusNamingTx,
      verifyUsdtTransfer: async () => 'mismatch',
    });
    const input = payoutInput();
    const now = Date.now();
    const payment = pixReceived(input.payoutId) as Payment;
    const opened = {
      ...openingRecord(input),
      pixCopyPaste: '000201...6304ABCD',
      providerChargeId: CHARGE_ID,
    };
    const record = transition(opened, 'PROCESSING', new Date(now).toISOString(), {
      paidAt: payment.paidAt,
      paymentEventId: payment.eventId,
    });
    const facts: ProviderSettlementFact[] = [
      { kind: 'request_answered', at: now - 900, local: true, settlementId: 'stl_1', status: 'pending' },
      {
        kind: 'status_read',
        at: now - 800,
        status: { status: 'completed', chainId: 42161, txHash: TX_HASH, amountUsdt: '17.825311' },
      },
      { kind: 'chain_checked', at: now - 700, txHash: TX_HASH, amountUnits: '17825311', verdict: 'mismatch' },
    ];
    const knowledge = facts.reduce(evolve, beginProviderSettlement(42161, now - 1000, true, true));
    const handOver: PayoutHandOver = {
      record,
      settlingSince: now - 1000,
      overdueAlerted: true,
      inbox: { payment, settlementReports: [], seen: [payment.eventId], paidBy: undefined },
      attention: ['transfer_mismatch', 'settlement_overdue'],
      settlement: { mode: 'provider', released: false, knowledge },
    };
    const decided = await firstTaskWith(fake.activities, async (taskQueue) => {
      const h = await env.client.workflow.start(payoutWorkflow, {
        workflowId: payoutWorkflowId(input.payoutId),
        taskQueue,
        args: [{ ...input, handOver }],
      });
      const failed = h.executeUpdate(resolvePayoutUpdate, {
        args: [{ decision: 'fail', decidedBy: 'ops', reason: 'the provider sent nothing' }],
      });
      return async () => {
        const payout = await failed;
        await h.result();
        return payout;
      };
    });
    expect(decided).toMatchObject({ status: 'FAILED', failureReason: 'operator_decision' });
    // Nothing of the opening again: no charge, no screening, no PENDING write, no second overdue alert.
    expect(fake.callsOf('createPixCharge')).toHaveLength(0);
    expect(fake.callsOf('screenReceiver')).toHaveLength(0);
    expect(fake.callsOf('alertSettlementOverdue')).toHaveLength(0);
    expect(fake.callsOf('recordPayout').map(([p]) => (p as PayoutRecord).status)).toEqual(['FAILED']);
  }, 60_000);
});

interface Run {
  runId: string;
  events: number;
  continuedAsNew: boolean;
}

/** Every run of the workflow `started`, first to last, following each hand-over to the run it started. */
async function runsOf(
  env: TestWorkflowEnvironment,
  started: { workflowId: string; firstExecutionRunId: string },
): Promise<Run[]> {
  const { workflowId } = started;
  let runId: string | undefined = started.firstExecutionRunId;
  const runs: Run[] = [];
  while (runId !== undefined) {
    const history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>> = await env.client.workflow
      .getHandle(workflowId, runId)
      .fetchHistory();
    const events = history.events ?? [];
    const next: string | null | undefined =
      events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
    runs.push({ runId, events: events.length, continuedAsNew: next != null });
    runId = next ?? undefined;
  }
  return runs;
}

/** Handed over at least once; every run short of the hand-over mark plus a task's worth, far below the warning. */
function expectBounded(runs: Run[]): void {
  expect(runs.length).toBeGreaterThan(1);
  for (const run of runs) {
    expect({ runId: run.runId, under: run.events < HAND_OVER_AT_EVENTS + 100 }).toEqual({
      runId: run.runId,
      under: true,
    });
  }
  expect(Math.max(...runs.map((r) => r.events))).toBeLessThan(HISTORY_WARNING);
}
