import { ApplicationFailure } from '@temporalio/common';
import { toPayoutResponse, type PayoutRecord } from '../../src/domain/payout';
import type { ProviderEvent } from '../../src/domain/provider-event';
import {
  getPayoutQuery,
  openingRecord,
  payoutWorkflowId,
  providerEventSignal,
  resolvePayoutUpdate,
  type PayoutSettings,
  type PayoutWorkflowInput,
} from '../../src/workflows/payout.contract';
import {
  fakeActivities,
  gate,
  notYet,
  payoutInput,
  pixReceived,
  SETTLEMENT_ID,
  skipUntil,
  settlementCompleted,
  settlementFailed,
  TREASURY_TX_HASH,
  TX_HASH,
  waitForPayout,
  useTimeSkippingEnv,
  runPayout,
  withWorker,
  type PayoutHandle,
} from './harness';
import { payoutWorkflow } from '../../src/workflows/payout.workflow';
import { DEFAULT_NETWORK } from '../support/network';
import { historyOf, timerOf } from '../support/history';
import { until } from '../support/until';

/** The provider's status of a settlement it gave up before sending anything: the proof FAILED needs. */
const FAILED_BEFORE_BROADCAST = { status: 'failed' as const, chainId: 42161, failureReason: 'no liquidity' };
/** The provider's status of a settlement whose transaction reverted: the chain's revert is then proof. */
const FAILED_AFTER_REVERT = {
  status: 'failed' as const,
  chainId: 42161,
  txHash: TX_HASH,
  failureReason: 'reverted',
};

// Every transition and timer of the payout workflow on the time-skipping test server: an hour of
// charge expiry or six hours of settlement timeout pass in well under a second of real time.
describe('payoutWorkflow (time-skipping)', () => {
  const env = useTimeSkippingEnv();

  type Fake = ReturnType<typeof fakeActivities>;

  /** Starts a payout with `settings` on a worker with `fake`'s activities and hands it to `fn`. */
  function run<T>(
    fake: Fake,
    settings: Partial<PayoutSettings>,
    fn: (h: Handle, input: PayoutWorkflowInput) => Promise<T>,
  ): Promise<T> {
    const input = payoutInput(settings);
    return runPayout(env, fake, input, (h) => fn(h, input));
  }
  type Handle = PayoutHandle;

  const signal = (h: Handle, event: ProviderEvent) => h.signal(providerEventSignal, event);
  const charged = (h: Handle) => waitForPayout(h, (p) => p.pixCopyPaste !== '');
  const processing = (h: Handle) => waitForPayout(h, (p) => p.status === 'PROCESSING');
  const result = (h: Handle) => h.result() as Promise<PayoutRecord>;
  /** Waits (real time, the workflow parked on its timer) until the fake saw `n` calls of `name`. */
  const waitForCalls = (fake: Fake, name: Parameters<Fake['callsOf']>[0], n: number) =>
    until(
      () => `${n} calls of ${name} (${fake.callsOf(name).length} so far)`,
      () => (fake.callsOf(name).length >= n ? true : undefined),
      { timeoutMs: 10_000, intervalMs: 25 },
    );

  it('fails an unpaid payout when its PIX charge expires after an hour of workflow time', async () => {
    const fake = fakeActivities();
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      const payout = await result(h);
      // Workflow time moved a full hour, on a durable timer of that hour that fired (not a sleep).
      expect(Date.parse(payout.updatedAt) - Date.parse(input.createdAt)).toBeGreaterThanOrEqual(3_600_000);
      const expiry = timerOf(await historyOf(h), 3_600);
      expect(expiry.fired).toBeGreaterThan(expiry.started);
      expect(expiry.started).toBeGreaterThan(-1);
      return payout;
    });
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'charge_expired' });
    expect(fake.savedStatuses()).toEqual(['PENDING', 'PENDING', 'FAILED']);
    expect(fake.callsOf('requestSettlement')).toHaveLength(0);
    expect(toPayoutResponse(done, DEFAULT_NETWORK)).toMatchObject({
      settled_amount_usdt: 0,
      blockchain_tx_id: '',
    });
  });

  it('fails the payout when the provider cannot create the PIX charge', async () => {
    const fake = fakeActivities({
      createPixCharge: async () => {
        throw ApplicationFailure.nonRetryable('conflict', 'ProviderRejected');
      },
    });
    const done = await run(fake, {}, (h) => result(h));
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'charge_creation_failed' });
    // The charge is a local activity: its refusal fails the payout, with PENDING written before FAILED.
    expect(fake.savedStatuses()).toEqual(['PENDING', 'FAILED']);
  });

  it('answers POST from its first workflow task: the PENDING writes and the charge are local activities', async () => {
    const fake = fakeActivities();
    // Waits on the history, not by polling the query as the other tests do: on this test server a
    // query that arrives while a workflow task runs makes the server schedule another one.
    const events = await run(fake, {}, (h) =>
      until(
        'the expiry timer started',
        async () => {
          const history = await historyOf(h);
          return history.some((e) => e.timerStartedEventAttributes) ? history : undefined;
        },
        { timeoutMs: 10_000, intervalMs: 25 },
      ),
    );
    // No trip through the server for a step before the charge is known: the first workflow task's
    // completion records all three steps (PENDING, charge, PENDING with the charge) as local-activity
    // markers and starts the expiry timer; no activity task at all.
    const firstDone = events.findIndex((e) => e.workflowTaskCompletedEventAttributes);
    const nextTask = events.findIndex((e, i) => i > firstDone && e.workflowTaskScheduledEventAttributes);
    const decided = events.slice(firstDone + 1, nextTask === -1 ? undefined : nextTask);
    const markers = decided.flatMap((e) => e.markerRecordedEventAttributes?.markerName ?? []);
    expect(markers.filter((m) => m === 'core_local_activity')).toHaveLength(3);
    expect(decided.filter((e) => e.timerStartedEventAttributes)).toHaveLength(1);
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toHaveLength(0);
    expect(fake.savedStatuses()).toEqual(['PENDING', 'PENDING']);
    expect(fake.distinctCallsOf('createPixCharge')).toHaveLength(1);
  });

  it('moves PENDING -> PROCESSING on pix.received, keeping paid_at for later', async () => {
    const fake = fakeActivities();
    await run(fake, {}, async (h, input) => {
      await charged(h);
      expect((await h.query(getPayoutQuery)).status).toBe('PENDING');
      await signal(h, pixReceived(input.payoutId, { paidAt: '2026-11-21T22:01:02.000Z' } as never));
      const payout = await processing(h);
      expect(payout.paidAt).toBe('2026-11-21T22:01:02.000Z');
      // docs/api.md: paid_at is shown only once the payout is COMPLETED.
      expect(toPayoutResponse(payout, DEFAULT_NETWORK)).not.toHaveProperty('paid_at');
      expect(fake.savedStatuses()).toEqual(['PENDING', 'PENDING', 'PROCESSING']);
      await signal(h, settlementCompleted(input.payoutId));
      expect(toPayoutResponse(await result(h), DEFAULT_NETWORK).paid_at).toBe('2026-11-21T22:01:02.000Z');
    });
  });

  it('completes with every settlement field once the provider settled and the chain confirms', async () => {
    const fake = fakeActivities();
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId));
      await processing(h);
      await signal(h, settlementCompleted(input.payoutId));
      return result(h);
    });
    expect(done).toMatchObject({
      status: 'COMPLETED',
      blockchainTxId: TX_HASH,
      settledAmountUsdtUnits: '17825311',
      paidAt: '2026-11-21T22:00:00.000Z',
      confirmedAt: '2026-11-21T22:00:05.000Z',
    });
    expect(toPayoutResponse(done, DEFAULT_NETWORK)).toMatchObject({
      status: 'COMPLETED',
      settled_amount_usdt: 17.825311,
      blockchain_network: 'Arbitrum One',
      blockchain_chain_id: 42161,
      blockchain_tx_id: TX_HASH,
      block_explorer_url: `https://arbiscan.io/tx/${TX_HASH}`,
      paid_at: '2026-11-21T22:00:00.000Z',
      confirmed_at: '2026-11-21T22:00:05.000Z',
    });
    expect(fake.distinctCallsOf('requestSettlement')).toEqual([
      [
        {
          payoutId: done.id,
          chargeId: done.providerChargeId,
          receiverWallet: done.receiverWallet,
          chainId: 42161,
        },
      ],
    ]);
    expect(fake.distinctCallsOf('verifyUsdtTransfer')).toEqual([
      [
        {
          payoutId: done.id,
          txHash: TX_HASH,
          to: done.receiverWallet,
          amountUnits: '17825311',
          minConfirmations: 1,
        },
      ],
    ]);
    expect(fake.callsOf('alertSettlementBelowMinimum')).toHaveLength(0);
    expect(fake.savedStatuses()).toEqual(['PENDING', 'PENDING', 'PROCESSING', 'COMPLETED']);
  });

  describe('started with the charge the api created (D81)', () => {
    const API_CHARGE = { chargeId: 'chg_api000000000000000000', pixCopyPaste: '000201...api...6304BEEF' };
    /**
     * Times on the test server's clock, which earlier tests have skipped ahead of ours: the workflow
     * compares the charge's expiry and the payout's creation with it.
     */
    const serverTime = async (offsetMs: number) =>
      new Date((await env.currentTimeMs()) + offsetMs).toISOString();
    /** The api's charge, expiring an hour from now on the test server's clock. */
    const apiCharge = async () => ({ ...API_CHARGE, expiresAt: await serverTime(3_600_000) });

    /**
     * A payout whose charge (the api's) expired a minute before its first task, an hour after POST,
     * started together with `payment` (signal-with-start: judged in that first task); `fn` follows it.
     */
    async function expiredAtFirstTask() {
      const expiredAt = await serverTime(-60_000);
      const input = {
        ...payoutInput({}),
        createdAt: await serverTime(-3_660_000),
        charge: { ...API_CHARGE, expiresAt: expiredAt },
      };
      const run = <T>(fake: Fake, payment: ProviderEvent, fn: (h: SignaledHandle) => Promise<T>) =>
        withWorker(env, fake.activities, async (taskQueue) =>
          fn(
            await env.client.workflow.signalWithStart(payoutWorkflow, {
              workflowId: payoutWorkflowId(input.payoutId),
              taskQueue,
              args: [input],
              signal: providerEventSignal,
              signalArgs: [payment],
            }),
          ),
        );
      return { expiredAt, input, run };
    }
    type SignaledHandle = Awaited<
      ReturnType<typeof env.client.workflow.signalWithStart<typeof payoutWorkflow>>
    >;

    it("never asks the provider for a charge, opens with the api's, and completes on its payment", async () => {
      const fake = fakeActivities();
      const input = { ...payoutInput({}, { createdAt: await serverTime(0) }), charge: await apiCharge() };
      const done = await runPayout(env, fake, input, async (h) => {
        // The first thing the workflow holds, and saves, is the opening record with the api's charge.
        expect(await waitForPayout(h, (p) => p.pixCopyPaste !== '')).toEqual(openingRecord(input));
        await signal(h, pixReceived(input.payoutId, { chargeId: API_CHARGE.chargeId }));
        await processing(h);
        await signal(h, settlementCompleted(input.payoutId, { chargeId: API_CHARGE.chargeId }));
        return result(h);
      });
      expect(done).toMatchObject({ status: 'COMPLETED', providerChargeId: API_CHARGE.chargeId });
      expect(fake.callsOf('createPixCharge')).toHaveLength(0);
      expect(fake.distinctCallsOf('requestSettlement')).toEqual([
        [
          {
            payoutId: done.id,
            chargeId: API_CHARGE.chargeId,
            receiverWallet: done.receiverWallet,
            chainId: 42161,
          },
        ],
      ]);
      // One interim write fewer than a payout whose workflow created the charge.
      expect(fake.savedStatuses()).toEqual(['PENDING', 'PROCESSING', 'COMPLETED']);
    });

    it("judges payments against the api's charge from its first task: another charge's is refunded", async () => {
      const fake = fakeActivities();
      const input = { ...payoutInput({}, { createdAt: await serverTime(0) }), charge: await apiCharge() };
      const stray = pixReceived(input.payoutId); // on the harness's CHARGE_ID, not the api's
      const done = await runPayout(env, fake, input, async (h) => {
        await signal(h, stray);
        await waitForCalls(fake, 'recordLatePayment', 1);
        await signal(h, pixReceived(input.payoutId, { chargeId: API_CHARGE.chargeId }));
        await processing(h);
        await signal(h, settlementCompleted(input.payoutId, { chargeId: API_CHARGE.chargeId }));
        return result(h);
      });
      expect(done.status).toBe('COMPLETED');
      expect(fake.callsOf('recordLatePayment').map(([a]) => a)).toEqual([
        expect.objectContaining({ kind: 'wrong_charge', event: stray }),
      ]);
      expect(fake.callsOf('createPixCharge')).toHaveLength(0);
    });

    it('expired before its first task ran: a payment after the expiry is refunded, the charge reconciled at once', async () => {
      const fake = fakeActivities();
      const { input, run } = await expiredAtFirstTask();
      // Paid after the expiry (the provider's clock), and delivered with the start: judged in the first task.
      const late = pixReceived(input.payoutId, {
        chargeId: API_CHARGE.chargeId,
        paidAt: await serverTime(0),
      });
      const timersMs: number[] = [];
      const done = await run(fake, late, async (h) => {
        const ended = (await h.result()) as PayoutRecord;
        for (const e of (await h.fetchHistory()).events ?? []) {
          const timeout = e.timerStartedEventAttributes?.startToFireTimeout;
          if (timeout) timersMs.push(Number(timeout.seconds ?? 0) * 1000 + (timeout.nanos ?? 0) / 1e6);
        }
        return ended;
      });
      expect(done).toMatchObject({ status: 'FAILED', failureReason: 'charge_expired' });
      expect(fake.callsOf('recordLatePayment').map(([a]) => a)).toEqual([
        expect.objectContaining({ kind: 'late_payment', event: late }),
      ]);
      // No wait for a fresh expiry: the charge is removed and read at once, then the payout ends.
      expect(fake.callsOf('cancelPixCharge').map(([a]) => a)).toEqual([
        expect.objectContaining({ chargeId: API_CHARGE.chargeId }),
      ]);
      // The expiry's wait was 1 ms, not a fresh hour from the first task.
      expect(timersMs[0]).toBe(1);
      expect(timersMs).not.toContain(3_600_000);
      expect(fake.callsOf('requestSettlement')).toHaveLength(0);
      expect(fake.callsOf('createPixCharge')).toHaveLength(0);
    });

    it('expired before its first task ran: a payment made by the expiry (to the millisecond) is settled', async () => {
      const fake = fakeActivities();
      const { expiredAt, input, run } = await expiredAtFirstTask();
      const inTime = pixReceived(input.payoutId, { chargeId: API_CHARGE.chargeId, paidAt: expiredAt });
      const done = await run(fake, inTime, async (h) => {
        await until('PROCESSING', async () =>
          (await h.query(getPayoutQuery)).status === 'PROCESSING' ? true : undefined,
        );
        await h.signal(
          providerEventSignal,
          settlementCompleted(input.payoutId, { chargeId: API_CHARGE.chargeId }),
        );
        return (await h.result()) as PayoutRecord;
      });
      expect(done).toMatchObject({ status: 'COMPLETED', paidAt: expiredAt });
      expect(fake.callsOf('recordLatePayment')).toHaveLength(0);
    });
  });

  it('completes when the settlement event overtakes the payment being recorded', async () => {
    const processingSaved = gate();
    const release = gate();
    const fake = fakeActivities({
      recordPayout: async (p) => {
        if (p.status === 'PROCESSING') {
          processingSaved.open();
          await release.promise;
        }
      },
    });
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId));
      await processingSaved.promise;
      await signal(h, settlementCompleted(input.payoutId));
      release.open();
      return result(h);
    });
    expect(done.status).toBe('COMPLETED');
  });

  it('fails when the provider reports settlement failure and its status shows nothing was broadcast', async () => {
    const fake = fakeActivities({ fetchSettlementStatus: async () => FAILED_BEFORE_BROADCAST });
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId));
      await signal(h, settlementFailed(input.payoutId));
      return result(h);
    });
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'provider_reported_failure' });
    expect(fake.callsOf('verifyUsdtTransfer')).toHaveLength(0);
    // The webhook alone is not the proof: the settlement's status was read.
    expect(fake.callsOf('fetchSettlementStatus')).toEqual([
      [{ payoutId: done.id, settlementId: SETTLEMENT_ID }],
    ]);
    const response = toPayoutResponse(done, DEFAULT_NETWORK);
    expect(response).toMatchObject({
      settled_amount_usdt: 0,
      blockchain_network: '',
      blockchain_chain_id: 0,
      blockchain_tx_id: '',
      block_explorer_url: '',
    });
    expect(response).not.toHaveProperty('paid_at');
    expect(response).not.toHaveProperty('confirmed_at');
  });

  it('fails when the reported transfer reverted on chain and the provider calls that transfer failed', async () => {
    const fake = fakeActivities({
      verifyUsdtTransfer: async () => 'reverted',
      fetchSettlementStatus: async () => FAILED_AFTER_REVERT,
    });
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId));
      await signal(h, settlementCompleted(input.payoutId));
      return result(h);
    });
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'transfer_reverted' });
  });

  it('a reverted transfer the provider has not called failed is no proof: the one it names next completes the payout', async () => {
    const second = `0x${'cd'.repeat(32)}` as const;
    const fake = fakeActivities({
      verifyUsdtTransfer: async (req) =>
        (req as { txHash: string }).txHash === TX_HASH ? 'reverted' : 'confirmed',
      // Out of gas: the provider sent the transfer again.
      fetchSettlementStatus: async () => ({
        status: 'completed' as const,
        chainId: 42161,
        txHash: second,
        amountUsdt: '17.825311',
      }),
    });
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId));
      await signal(h, settlementCompleted(input.payoutId));
      return result(h);
    });
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: second });
    expect(fake.callsOf('recordLatePayment')).toHaveLength(0);
  });

  it('keeps a payout whose reported transfer does not match waiting, alerted, until an operator decides', async () => {
    const fake = fakeActivities({
      verifyUsdtTransfer: async () => {
        throw ApplicationFailure.retryable('no unclaimed transfer of that amount', 'TransferMismatch');
      },
    });
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      const paid = pixReceived(input.payoutId);
      await signal(h, paid);
      await signal(h, settlementCompleted(input.payoutId));
      // A round of verification retries (minutes) passes in workflow time before the alert.
      await skipUntil(env, () => fake.callsOf('raiseAttention').length > 0);
      expect((await h.query(getPayoutQuery)).status).toBe('PROCESSING');
      const decided = h.executeUpdate(resolvePayoutUpdate, {
        args: [
          { decision: 'fail', decidedBy: 'ops@example.com', reason: 'provider confirmed it sent nothing' },
        ],
      });
      // The running verification is waited for (its answer would win), up to its next retry: workflow
      // time has to pass, and the test server lets it pass while the result is awaited.
      const ended = await result(h);
      expect(await decided).toMatchObject({ status: 'FAILED', failureReason: 'operator_decision' });
      return ended;
    });
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'operator_decision' });
    expect(fake.callsOf('raiseAttention')[0]).toEqual([
      expect.objectContaining({ payoutId: done.id, kind: 'transfer_mismatch' }),
    ]);
    expect(fake.callsOf('recordOperatorDecision')).toEqual([
      [
        {
          payoutId: done.id,
          decision: 'fail',
          decidedBy: 'ops@example.com',
          reason: 'provider confirmed it sent nothing',
        },
      ],
    ]);
    expect(fake.callsOf('recordLatePayment').map(([a]) => (a as { kind: string }).kind)).toEqual([
      'payout_failed',
    ]);
    // Its open items are answered by the terminal write of the read model (recordPayout), not one by one.
    expect(fake.callsOf('clearAttention')).toEqual([]);
  });

  it('refuses an operator decision while the payout waits on nothing unknown', async () => {
    const fake = fakeActivities({ verifyUsdtTransfer: async () => 'confirmed' });
    await run(fake, {}, async (h, input) => {
      await charged(h);
      await expect(
        h.executeUpdate(resolvePayoutUpdate, {
          args: [{ decision: 'fail', decidedBy: 'ops', reason: 'impatient' }],
        }),
      ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/not waiting on an unknown/) } });
      await signal(h, pixReceived(input.payoutId));
      await signal(h, settlementCompleted(input.payoutId));
      expect((await result(h)).status).toBe('COMPLETED');
    });
    expect(fake.callsOf('recordOperatorDecision')).toHaveLength(0);
  });

  it('does not trust a settlement reported on another chain: it waits, alerted, for one on ours', async () => {
    const fake = fakeActivities();
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId));
      await signal(h, settlementCompleted(input.payoutId, { chainId: 1 } as never));
      await waitForCalls(fake, 'raiseAttention', 1);
      expect(fake.callsOf('verifyUsdtTransfer')).toHaveLength(0);
      await signal(h, settlementCompleted(input.payoutId));
      return result(h);
    });
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: TX_HASH });
    expect(fake.callsOf('raiseAttention')[0]).toEqual([
      expect.objectContaining({ kind: 'transfer_mismatch' }),
    ]);
  });

  it('never fails at the settlement deadline: overdue, it reads the settlement status and completes', async () => {
    let overdue = false;
    const fake = fakeActivities({
      alertSettlementOverdue: async () => {
        overdue = true;
      },
      // The provider went quiet after broadcasting; its status endpoint knows the transfer.
      fetchSettlementStatus: async () =>
        overdue
          ? { status: 'completed' as const, chainId: 42161, txHash: TX_HASH, amountUsdt: '17.825311' }
          : { status: 'broadcast' as const, chainId: 42161 },
    });
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId));
      const processed = await processing(h);
      const payout = await result(h);
      expect(Date.parse(payout.updatedAt) - Date.parse(processed.updatedAt)).toBeGreaterThanOrEqual(
        21_600_000,
      );
      return payout;
    });
    expect(done).toMatchObject({
      status: 'COMPLETED',
      blockchainTxId: TX_HASH,
      settledAmountUsdtUnits: '17825311',
    });
    expect(fake.callsOf('raiseAttention').map(([a]) => (a as { kind: string }).kind)).toEqual([
      'settlement_overdue',
    ]);
    expect(fake.callsOf('fetchSettlementStatus').length).toBeGreaterThan(5);
  });

  it('keeps verifying a reported transfer past the deadline: one mined late completes the payout', async () => {
    let overdue = false;
    const fake = fakeActivities({
      alertSettlementOverdue: async () => {
        overdue = true;
      },
      verifyUsdtTransfer: async () => {
        if (!overdue) throw notYet();
        return 'confirmed';
      },
    });
    const done = await run(fake, { settlementTimeoutSeconds: 900 }, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId));
      await signal(h, settlementCompleted(input.payoutId));
      return result(h);
    });
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: TX_HASH });
    expect(fake.callsOf('recordLatePayment')).toHaveLength(0);
  });

  it('completes when the provider reported failure but its status shows a transfer the chain confirms', async () => {
    const fake = fakeActivities({
      fetchSettlementStatus: async () => ({
        status: 'failed' as const,
        chainId: 42161,
        txHash: TX_HASH,
        amountUsdt: '17.825311',
      }),
    });
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId));
      await signal(h, settlementFailed(input.payoutId));
      return result(h);
    });
    // The chain is the truth; the contradiction is flagged for review.
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: TX_HASH });
    expect(fake.callsOf('raiseAttention').map(([a]) => (a as { kind: string }).kind)).toEqual([
      'provider_contradiction',
    ]);
  });

  it('fails when the provider refuses the settlement request', async () => {
    const fake = fakeActivities({
      requestSettlement: async () => {
        throw ApplicationFailure.nonRetryable('charge is not paid', 'ProviderRejected');
      },
    });
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId));
      return result(h);
    });
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'settlement_request_failed' });
  });

  it('still completes when the settlement request kept failing but the provider settled anyway', async () => {
    // Answers lost on the way back: the provider accepted a request we never heard about.
    const fake = fakeActivities({
      requestSettlement: async () => {
        throw ApplicationFailure.retryable('socket hang up', 'Error');
      },
    });
    const done = await run(fake, { settlementTimeoutSeconds: 600 }, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId));
      await processing(h);
      await signal(h, settlementCompleted(input.payoutId));
      return result(h);
    });
    expect(done.status).toBe('COMPLETED');
    expect(fake.callsOf('requestSettlement').length).toBeGreaterThan(1);
  });

  it('applies each provider event once, however often it is delivered', async () => {
    const fake = fakeActivities();
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      const payment = pixReceived(input.payoutId);
      const settled = settlementCompleted(input.payoutId);
      for (let i = 0; i < 3; i++) await signal(h, payment);
      await processing(h);
      await Promise.all([signal(h, settled), signal(h, settled), signal(h, payment)]);
      return result(h);
    });
    expect(done.status).toBe('COMPLETED');
    expect(fake.savedStatuses()).toEqual(['PENDING', 'PENDING', 'PROCESSING', 'COMPLETED']);
    expect(fake.distinctCallsOf('requestSettlement')).toHaveLength(1);
    expect(fake.distinctCallsOf('verifyUsdtTransfer')).toHaveLength(1);
    // A repeat of the same event is not a second payment: nothing to refund.
    expect(fake.callsOf('recordLatePayment')).toHaveLength(0);
  });

  it('ignores an event for another payout', async () => {
    const fake = fakeActivities();
    const done = await run(fake, {}, async (h) => {
      await charged(h);
      await signal(h, pixReceived('6f1c2d3e-4b5a-4978-8a9b-0c1d2e3f4a5b'));
      await signal(h, settlementCompleted('6f1c2d3e-4b5a-4978-8a9b-0c1d2e3f4a5b'));
      return result(h);
    });
    // Never paid, so it expires: the foreign payment moved nothing.
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'charge_expired' });
    expect(fake.callsOf('requestSettlement')).toHaveLength(0);
  });

  it('records a payment that arrives after FAILED for refund and never settles it', async () => {
    const failing = gate();
    const release = gate();
    const fake = fakeActivities({
      recordPayout: async (p) => {
        if (p.status === 'FAILED') {
          failing.open();
          await release.promise;
        }
      },
    });
    let late: ProviderEvent | undefined;
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      const finished = result(h); // lets time skip to the expiry
      await failing.promise;
      late = pixReceived(input.payoutId);
      await signal(h, late);
      release.open();
      return finished;
    });
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'charge_expired' });
    expect(fake.callsOf('recordLatePayment')).toEqual([
      [
        {
          payoutId: done.id,
          event: late,
          kind: 'late_payment',
          reason: 'payment received after the payout was FAILED',
        },
      ],
    ]);
    expect(fake.callsOf('requestSettlement')).toHaveLength(0);
    expect(fake.savedStatuses()).toEqual(['PENDING', 'PENDING', 'FAILED']);
  });

  it('records a second, distinct payment of the same charge for refund and settles only the first', async () => {
    const fake = fakeActivities();
    let second: ProviderEvent | undefined;
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId));
      await processing(h);
      second = pixReceived(input.payoutId);
      await signal(h, second);
      await signal(h, settlementCompleted(input.payoutId));
      return result(h);
    });
    expect(done.status).toBe('COMPLETED');
    expect(fake.distinctCallsOf('requestSettlement')).toHaveLength(1);
    expect(fake.callsOf('recordLatePayment')).toEqual([
      [
        {
          payoutId: done.id,
          event: second,
          kind: 'second_payment',
          reason: 'second payment for the same PIX charge',
        },
      ],
    ]);
  });

  it('refunds a payment of another amount or on another charge, and keeps waiting for the right one', async () => {
    const fake = fakeActivities();
    const wrong: ProviderEvent[] = [];
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      wrong.push(pixReceived(input.payoutId, { amountBrl: '1.00' } as never));
      wrong.push(pixReceived(input.payoutId, { amountBrl: '100.01' } as never));
      wrong.push(pixReceived(input.payoutId, { chargeId: 'chg_ffffffffffffffffffffff' } as never));
      for (const event of wrong) await signal(h, event);
      // Observable end of the wrong payments: each opened its refund case while PENDING.
      await waitForCalls(fake, 'recordLatePayment', 3);
      expect((await h.query(getPayoutQuery)).status).toBe('PENDING');
      await signal(h, pixReceived(input.payoutId));
      await processing(h);
      await signal(h, settlementCompleted(input.payoutId));
      return result(h);
    });
    expect(done.status).toBe('COMPLETED');
    expect(fake.distinctCallsOf('requestSettlement')).toHaveLength(1);
    expect(fake.callsOf('recordLatePayment').map(([a]) => (a as { kind: string }).kind)).toEqual([
      'wrong_amount',
      'wrong_amount',
      'wrong_charge',
    ]);
    expect(fake.callsOf('recordLatePayment').map(([a]) => (a as { event: ProviderEvent }).event)).toEqual(
      wrong,
    );
  });

  it('expires with only wrong payments received: each refunded, none settled', async () => {
    const fake = fakeActivities();
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId, { amountBrl: '1.00' } as never));
      return result(h);
    });
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'charge_expired' });
    expect(fake.callsOf('requestSettlement')).toHaveLength(0);
    expect(fake.callsOf('recordLatePayment')).toHaveLength(1);
  });

  it('at expiry, settles a payment the provider reports made by the expiry although no webhook came', async () => {
    const paidInTime = { eventId: 'evt_lost_webhook', paidAt: '2026-11-21T22:59:59.000Z' };
    const fake = fakeActivities({
      fetchChargeStatus: async (req) => ({
        status: 'paid' as const,
        expiresAt: '2026-11-21T23:00:00.000Z',
        payments: [pixReceived(req.payoutId, paidInTime as never) as never],
      }),
    });
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      // Deliveries are unordered: the settlement report is kept until the payout is PROCESSING.
      await signal(h, settlementCompleted(input.payoutId));
      return result(h);
    });
    expect(done).toMatchObject({
      status: 'COMPLETED',
      paidAt: paidInTime.paidAt,
      paymentEventId: 'evt_lost_webhook',
    });
    expect(fake.callsOf('fetchChargeStatus')).toEqual([
      [{ payoutId: done.id, chargeId: done.providerChargeId }],
    ]);
    expect(fake.callsOf('recordLatePayment')).toHaveLength(0);
  });

  it('at expiry, refunds a payment the provider reports made after the expiry, and fails', async () => {
    const fake = fakeActivities({
      fetchChargeStatus: async (req) => ({
        status: 'paid' as const,
        expiresAt: '2026-11-21T23:00:00.000Z',
        payments: [pixReceived(req.payoutId, { paidAt: '2026-11-21T23:00:00.001Z' } as never) as never],
      }),
    });
    const done = await run(fake, {}, (h) => result(h));
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'charge_expired' });
    expect(fake.callsOf('recordLatePayment').map(([a]) => (a as { kind: string }).kind)).toEqual([
      'late_payment',
    ]);
    expect(fake.callsOf('requestSettlement')).toHaveLength(0);
  });

  it.each([
    ['the provider reports settlement failure', 'provider_reported_failure'],
    ['the transfer reverted', 'transfer_reverted'],
  ])('opens a refund case for the payment when a paid payout fails because %s', async (_what, reason) => {
    const fake = fakeActivities({
      verifyUsdtTransfer: async () => 'reverted',
      fetchSettlementStatus: async () =>
        reason === 'transfer_reverted' ? FAILED_AFTER_REVERT : FAILED_BEFORE_BROADCAST,
    });
    let paid: ProviderEvent | undefined;
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      paid = pixReceived(input.payoutId);
      await signal(h, paid);
      await processing(h);
      await signal(
        h,
        reason === 'transfer_reverted'
          ? settlementCompleted(input.payoutId)
          : settlementFailed(input.payoutId),
      );
      return result(h);
    });
    expect(done).toMatchObject({ status: 'FAILED', failureReason: reason });
    expect(fake.callsOf('recordLatePayment')).toEqual([
      [
        {
          payoutId: done.id,
          event: paid,
          kind: 'payout_failed',
          reason: `payout failed (${reason}) after its payment was received`,
        },
      ],
    ]);
  });

  it('never moves a terminal payout, and flags a settlement that lands after FAILED', async () => {
    const terminal = gate();
    const release = gate();
    const fake = fakeActivities({
      fetchSettlementStatus: async () => FAILED_BEFORE_BROADCAST,
      recordPayout: async (p) => {
        if (p.status === 'FAILED') {
          terminal.open();
          await release.promise;
        }
      },
    });
    let lateSettlement: ProviderEvent | undefined;
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId));
      await signal(h, settlementFailed(input.payoutId));
      await terminal.promise;
      lateSettlement = settlementCompleted(input.payoutId);
      await signal(h, lateSettlement);
      await signal(h, settlementFailed(input.payoutId));
      release.open();
      return result(h);
    });
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'provider_reported_failure' });
    expect(fake.savedStatuses()).toEqual(['PENDING', 'PENDING', 'PROCESSING', 'FAILED']);
    expect(fake.callsOf('verifyUsdtTransfer')).toHaveLength(0);
    expect(fake.callsOf('alertLateSettlement')).toEqual([
      [{ payoutId: done.id, status: 'FAILED', event: lateSettlement }],
    ]);
  });

  it('keeps a COMPLETED payout COMPLETED whatever arrives afterwards', async () => {
    const terminal = gate();
    const release = gate();
    const fake = fakeActivities({
      recordPayout: async (p) => {
        if (p.status === 'COMPLETED') {
          terminal.open();
          await release.promise;
        }
      },
    });
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId));
      await signal(h, settlementCompleted(input.payoutId));
      await terminal.promise;
      await signal(h, settlementFailed(input.payoutId));
      release.open();
      return result(h);
    });
    expect(done.status).toBe('COMPLETED');
    expect(fake.savedStatuses()).toEqual(['PENDING', 'PENDING', 'PROCESSING', 'COMPLETED']);
  });

  it('completes a settlement below the guaranteed minimum and fires the alert', async () => {
    const fake = fakeActivities();
    const done = await run(fake, {}, async (h, input) => {
      await charged(h);
      await signal(h, pixReceived(input.payoutId));
      await signal(h, settlementCompleted(input.payoutId, { amountUsdt: '17.000000' } as never));
      return result(h);
    });
    expect(done).toMatchObject({ status: 'COMPLETED', settledAmountUsdtUnits: '17000000' });
    expect(fake.callsOf('alertSettlementBelowMinimum')).toEqual([
      [
        {
          payoutId: done.id,
          partnerId: done.partnerId,
          minAmountUsdtUnits: '17152658',
          settledAmountUsdtUnits: '17000000',
        },
      ],
    ]);
  });

  describe('treasury mode', () => {
    it('sends the guaranteed minimum from the treasury and completes on confirmation', async () => {
      const fake = fakeActivities();
      const done = await run(fake, { settlementMode: 'treasury' }, async (h, input) => {
        await charged(h);
        await signal(h, pixReceived(input.payoutId));
        // The provider's settlement events mean nothing in this mode.
        await signal(h, settlementFailed(input.payoutId));
        return result(h);
      });
      expect(done).toMatchObject({
        status: 'COMPLETED',
        blockchainTxId: TREASURY_TX_HASH,
        settledAmountUsdtUnits: '17152658',
        paidAt: '2026-11-21T22:00:00.000Z',
      });
      expect(done.confirmedAt).toEqual(expect.any(String));
      expect(fake.callsOf('requestSettlement')).toHaveLength(0);
      expect(fake.callsOf('sendTreasuryTransfer')).toEqual([
        [
          {
            payoutId: done.id,
            to: done.receiverWallet,
            amountUnits: '17152658',
            // The payment it pays for, read again right before signing.
            chargeId: done.providerChargeId,
            paymentEventId: expect.stringMatching(/^evt_/),
          },
        ],
      ]);
      expect(fake.callsOf('alertSettlementBelowMinimum')).toHaveLength(0);
    });

    it('never fails on a timeout while the signed transfer may land: it alerts and keeps waiting', async () => {
      let overdue = false;
      const fake = fakeActivities({
        alertSettlementOverdue: async () => {
          overdue = true;
        },
        confirmTreasuryTransfer: async () => {
          if (!overdue) throw notYet();
          return { status: 'confirmed' as const, txHash: TREASURY_TX_HASH };
        },
      });
      const done = await run(
        fake,
        { settlementMode: 'treasury', settlementTimeoutSeconds: 900 },
        async (h, input) => {
          await charged(h);
          await signal(h, pixReceived(input.payoutId));
          return result(h);
        },
      );
      expect(done.status).toBe('COMPLETED');
      expect(fake.callsOf('alertSettlementOverdue')).toEqual([
        [{ payoutId: done.id, partnerId: done.partnerId, mode: 'treasury', overdueSeconds: 900 }],
      ]);
      expect(fake.savedStatuses()).toEqual(['PENDING', 'PENDING', 'PROCESSING', 'COMPLETED']);
    });

    it('fails when the treasury refuses before signing (nothing can land)', async () => {
      const fake = fakeActivities({
        sendTreasuryTransfer: async () => {
          throw ApplicationFailure.nonRetryable('treasury holds 0 USDT units', 'ChainRejected');
        },
      });
      const done = await run(fake, { settlementMode: 'treasury' }, async (h, input) => {
        await charged(h);
        await signal(h, pixReceived(input.payoutId));
        return result(h);
      });
      expect(done).toMatchObject({ status: 'FAILED', failureReason: 'settlement_request_failed' });
      expect(fake.callsOf('confirmTreasuryTransfer')).toHaveLength(0);
      // Its rounds closed first: no attempt still running elsewhere can sign for it afterwards.
      expect(fake.callsOf('closeTreasuryRounds')).toEqual([[{ payoutId: done.id }]]);
    });

    it('ends FAILED payment_returned, with no refund case, when the payment was returned in full before signing', async () => {
      const fake = fakeActivities({
        sendTreasuryTransfer: async () => {
          throw ApplicationFailure.nonRetryable(
            'payment returned to the payer in full',
            'PaymentReturnedInFull',
          );
        },
      });
      const done = await run(fake, { settlementMode: 'treasury' }, async (h, input) => {
        await charged(h);
        await signal(h, pixReceived(input.payoutId));
        return result(h);
      });
      expect(done).toMatchObject({ status: 'FAILED', failureReason: 'payment_returned' });
      expect(fake.callsOf('closeTreasuryRounds')).toEqual([[{ payoutId: done.id }]]);
      // The payer has the BRL back: refunding it again would pay it twice.
      expect(fake.callsOf('recordLatePayment')).toHaveLength(0);
    });

    it('a refusal while an earlier attempt signed a transfer does not fail: that transfer is confirmed', async () => {
      const fake = fakeActivities({
        sendTreasuryTransfer: async () => {
          throw ApplicationFailure.nonRetryable('treasury holds 0 USDT units', 'ChainRejected');
        },
        closeTreasuryRounds: async () => 'signed' as const,
      });
      const done = await run(fake, { settlementMode: 'treasury' }, async (h, input) => {
        await charged(h);
        await signal(h, pixReceived(input.payoutId));
        return result(h);
      });
      expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: TREASURY_TX_HASH });
      expect(fake.callsOf('confirmTreasuryTransfer')).toHaveLength(1);
      expect(fake.callsOf('recordLatePayment')).toHaveLength(0);
    });

    it('fails when the treasury transfer reverted, and when its nonce went to another transaction', async () => {
      const reverted = fakeActivities({
        confirmTreasuryTransfer: async () => ({ status: 'reverted' as const, txHash: TREASURY_TX_HASH }),
      });
      const a = await run(reverted, { settlementMode: 'treasury' }, async (h, input) => {
        await charged(h);
        await signal(h, pixReceived(input.payoutId));
        return result(h);
      });
      expect(a).toMatchObject({ status: 'FAILED', failureReason: 'transfer_reverted' });

      const replaced = fakeActivities({
        confirmTreasuryTransfer: async () => {
          throw ApplicationFailure.nonRetryable('nonce used by another transaction', 'ChainRejected');
        },
      });
      const b = await run(replaced, { settlementMode: 'treasury' }, async (h, input) => {
        await charged(h);
        await signal(h, pixReceived(input.payoutId));
        return result(h);
      });
      expect(b).toMatchObject({ status: 'FAILED', failureReason: 'transfer_nonce_taken' });
      // Proven unable to land: only later signings are closed off.
      for (const fake of [reverted, replaced]) {
        expect(fake.callsOf('closeTreasuryRounds')).toEqual([
          [{ payoutId: expect.any(String), openRoundCannotLand: true }],
        ]);
      }
    });

    it('a round proven dead does not fail the payout while a newer one is signed: the newer is confirmed', async () => {
      // An attempt of the send still running on some worker signed round 1 after round 0's revert was read.
      const answers = [
        { status: 'reverted' as const, txHash: TREASURY_TX_HASH, round: 0 },
        { status: 'confirmed' as const, txHash: `0x${'cd'.repeat(32)}` as const, round: 1 },
      ];
      const fake = fakeActivities({
        confirmTreasuryTransfer: async () => answers.shift()!,
        closeTreasuryRounds: async (req: { deadRound?: number }) =>
          req.deadRound === 0 ? ('signed' as const) : ('closed' as const),
      });
      const done = await run(fake, { settlementMode: 'treasury' }, async (h, input) => {
        await charged(h);
        await signal(h, pixReceived(input.payoutId));
        return result(h);
      });
      expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: `0x${'cd'.repeat(32)}` });
      expect(fake.callsOf('closeTreasuryRounds')).toEqual([[{ payoutId: done.id, deadRound: 0 }]]);
    });

    it('completes with the hash that was mined: a re-priced replacement', async () => {
      const replacement = `0x${'ef'.repeat(32)}` as const;
      const fake = fakeActivities({
        confirmTreasuryTransfer: async () => ({ status: 'confirmed' as const, txHash: replacement }),
      });
      const done = await run(fake, { settlementMode: 'treasury' }, async (h, input) => {
        await charged(h);
        await signal(h, pixReceived(input.payoutId));
        return result(h);
      });
      expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: replacement });
    });
  });
});
