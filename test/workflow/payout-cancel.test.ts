import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  cancelPayoutUpdate,
  PAYOUT_NOT_CANCELLABLE,
  providerEventSignal,
} from '../../src/workflows/payout.contract';
import {
  fakeActivities,
  gate,
  payoutInput,
  pixReceived,
  settlementCompleted,
  waitForPayout,
  startPayout,
  withWorker,
  useTimeSkippingEnv,
  type PayoutHandle,
} from './harness';
import { historyOf } from '../support/history';
import { until } from '../support/until';

// The cancel decision of the payout workflow on the time-skipping server: one decision between the
// partner's cancel and the payment, whichever the provider saw first.
describe('payoutWorkflow cancelPayout update', () => {
  const env = useTimeSkippingEnv();

  async function start(taskQueue: string, settings: Parameters<typeof payoutInput>[0] = {}) {
    const input = payoutInput(settings);
    const handle = await startPayout(env, taskQueue, input);
    await waitForPayout(handle, (p) => p.providerChargeId !== undefined);
    return { handle, input };
  }

  /** The refusal's message, which the api answers as 409. */
  async function refusal(promise: Promise<unknown>): Promise<string> {
    const err = await promise.then(
      () => {
        throw new Error('cancel was accepted');
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    const cause = (err as WorkflowUpdateFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect((cause as ApplicationFailure).type).toBe(PAYOUT_NOT_CANCELLABLE);
    return (cause as ApplicationFailure).message;
  }

  test('PENDING: the charge is removed and the payout FAILED cancelled', async () => {
    const fake = fakeActivities();
    await withWorker(env, fake.activities, async (taskQueue) => {
      const { handle, input } = await start(taskQueue);
      const cancelled = await handle.executeUpdate(cancelPayoutUpdate);
      expect(cancelled).toMatchObject({ status: 'FAILED', failureReason: 'cancelled' });
      expect(fake.callsOf('cancelPixCharge')).toEqual([
        [{ payoutId: input.payoutId, chargeId: cancelled.providerChargeId }],
      ]);
      expect(await handle.result()).toMatchObject({ status: 'FAILED', failureReason: 'cancelled' });
      expect(fake.callsOf('requestSettlement')).toEqual([]);
      expect(fake.callsOf('fetchChargeStatus')).toEqual([]);
    });
  });

  test('a payment arriving while the charge is removed is refunded, never settled', async () => {
    const removal = gate();
    const fake = fakeActivities({
      cancelPixCharge: async () => {
        await removal.promise;
        return { kind: 'removed' as const, removedAt: '2026-11-21T22:30:00.000Z' };
      },
    });
    await withWorker(env, fake.activities, async (taskQueue) => {
      const { handle, input } = await start(taskQueue);
      const cancel = handle.executeUpdate(cancelPayoutUpdate);
      await waitForPayout(handle, () => fake.callsOf('cancelPixCharge').length === 1);
      await handle.signal(providerEventSignal, pixReceived(input.payoutId));
      removal.open();
      expect(await cancel).toMatchObject({ status: 'FAILED', failureReason: 'cancelled' });
      expect(await handle.result()).toMatchObject({ status: 'FAILED', failureReason: 'cancelled' });
      expect(fake.callsOf('recordLatePayment')).toEqual([
        [expect.objectContaining({ kind: 'late_payment' })],
      ]);
      expect(fake.callsOf('requestSettlement')).toEqual([]);
    });
  });

  test('a payment applied first: refused as being processed, and the payout settles', async () => {
    const fake = fakeActivities();
    await withWorker(env, fake.activities, async (taskQueue) => {
      const { handle, input } = await start(taskQueue);
      await handle.signal(providerEventSignal, pixReceived(input.payoutId));
      expect(await refusal(handle.executeUpdate(cancelPayoutUpdate))).toBe(
        'payout is already being processed',
      );
      expect(fake.callsOf('cancelPixCharge')).toEqual([]);
      await waitForPayout(handle, (p) => p.status === 'PROCESSING');
      await handle.signal(providerEventSignal, settlementCompleted(input.payoutId));
      expect((await handle.result()).status).toBe('COMPLETED');
    });
  });

  test('the provider saw the payment first (already_paid): the payment is fetched and settles', async () => {
    const removal = gate();
    let paidEvent: ReturnType<typeof pixReceived> | undefined;
    const fake = fakeActivities({
      cancelPixCharge: async () => {
        await removal.promise;
        return { kind: 'already_paid' as const };
      },
      fetchChargeStatus: async (req) => {
        paidEvent ??= pixReceived(req.payoutId);
        const e = paidEvent as Extract<typeof paidEvent, { type: 'pix.received' }>;
        return {
          status: 'paid' as const,
          expiresAt: '2026-11-21T23:00:00.000Z',
          payments: [e],
        };
      },
    });
    await withWorker(env, fake.activities, async (taskQueue) => {
      const { handle, input } = await start(taskQueue);
      const cancel = handle.executeUpdate(cancelPayoutUpdate);
      await waitForPayout(handle, () => fake.callsOf('cancelPixCharge').length === 1);
      removal.open();
      expect(await refusal(cancel)).toBe('payout is already being processed');
      await waitForPayout(handle, (p) => p.status === 'PROCESSING');
      await handle.signal(providerEventSignal, settlementCompleted(input.payoutId));
      const result = await handle.result();
      expect(result.status).toBe('COMPLETED');
      expect(result.paymentEventId).toBe(paidEvent!.eventId);
      expect(fake.callsOf('recordLatePayment')).toEqual([]);
    });
  });

  // The expiry timer fires while the cancel is with the provider: the cancel under way is decided
  // first (the expiry waits for it), so there is one decision, never a cancel and a reconciliation.
  // The charge expires after 3 s of workflow time, which here is real time: the test server skips
  // time only while a test awaits a result, and the cancel is sent well before. The tests wait for
  // the expiry timer to be in the history before the provider answers the cancel.
  describe('a cancel and the expiry at the same workflow time', () => {
    const SHORT = { chargeExpirySeconds: 3 };
    const expiryFired = (handle: PayoutHandle) =>
      until('the expiry timer fired', async () =>
        (await historyOf(handle)).some((e) => e.timerFiredEventAttributes) ? true : undefined,
      );

    test('removed: FAILED cancelled, no reconciliation, and a payment in the race is refunded', async () => {
      const removal = gate();
      const fake = fakeActivities({
        cancelPixCharge: async () => {
          await removal.promise;
          return { kind: 'removed' as const, removedAt: '2026-11-21T23:00:00.000Z' };
        },
      });
      await withWorker(env, fake.activities, async (taskQueue) => {
        const { handle, input } = await start(taskQueue, SHORT);
        const cancel = handle.executeUpdate(cancelPayoutUpdate);
        await waitForPayout(handle, () => fake.callsOf('cancelPixCharge').length === 1);
        // The charge expires while its removal is unanswered.
        await expiryFired(handle);
        const payment = pixReceived(input.payoutId);
        await handle.signal(providerEventSignal, payment);
        removal.open();
        expect(await cancel).toMatchObject({ status: 'FAILED', failureReason: 'cancelled' });
        expect(await handle.result()).toMatchObject({ status: 'FAILED', failureReason: 'cancelled' });
        // One removal (the cancel's): the expiry path never ran.
        expect(fake.callsOf('cancelPixCharge')).toHaveLength(1);
        expect(fake.callsOf('fetchChargeStatus')).toEqual([]);
        expect(fake.callsOf('requestSettlement')).toEqual([]);
        expect(fake.callsOf('recordLatePayment')).toEqual([
          [expect.objectContaining({ event: payment, kind: 'late_payment' })],
        ]);
      });
    });

    test('already paid: the cancel is refused and the expiry path settles the payment it found', async () => {
      const removal = gate();
      let paid: ReturnType<typeof pixReceived> | undefined;
      const fake = fakeActivities({
        cancelPixCharge: async () => {
          await removal.promise;
          return { kind: 'already_paid' as const };
        },
        fetchChargeStatus: async (req) => {
          paid ??= pixReceived(req.payoutId, { paidAt: '2026-11-21T22:59:00.000Z' });
          return {
            status: 'paid' as const,
            expiresAt: '2026-11-21T23:00:00.000Z',
            payments: [paid as Extract<typeof paid, { type: 'pix.received' }>],
          };
        },
      });
      await withWorker(env, fake.activities, async (taskQueue) => {
        const { handle, input } = await start(taskQueue, SHORT);
        const cancel = handle.executeUpdate(cancelPayoutUpdate);
        await waitForPayout(handle, () => fake.callsOf('cancelPixCharge').length === 1);
        await expiryFired(handle);
        removal.open();
        expect(await refusal(cancel)).toBe('payout is already being processed');
        await waitForPayout(handle, (p) => p.status === 'PROCESSING');
        // The payment the cancel found is the payout's: no second removal, no refund.
        expect(fake.callsOf('cancelPixCharge')).toHaveLength(1);
        await handle.signal(providerEventSignal, settlementCompleted(input.payoutId));
        const done = await handle.result();
        expect(done).toMatchObject({ status: 'COMPLETED', paymentEventId: paid!.eventId });
        expect(fake.callsOf('recordLatePayment')).toEqual([]);
      });
    });

    test('past the expiry with no cancel under way: reconciliation decides and a cancel is refused', async () => {
      const reading = gate();
      const fake = fakeActivities({
        fetchChargeStatus: async () => {
          await reading.promise;
          return { status: 'expired' as const, expiresAt: '2026-11-21T23:00:00.000Z', payments: [] };
        },
      });
      await withWorker(env, fake.activities, async (taskQueue) => {
        const { handle } = await start(taskQueue, SHORT);
        await waitForPayout(handle, () => fake.callsOf('fetchChargeStatus').length === 1, 30_000);
        expect(await refusal(handle.executeUpdate(cancelPayoutUpdate))).toBe(
          'payout is already being processed',
        );
        reading.open();
        expect(await handle.result()).toMatchObject({ status: 'FAILED', failureReason: 'charge_expired' });
        // The expiry's removal only.
        expect(fake.callsOf('cancelPixCharge')).toHaveLength(1);
      });
    });
  });

  // Reconciliation at expiry, on the provider's clock: paid by expires_at (inclusive) is in time.
  describe('a payment at the expiry instant', () => {
    const EXPIRES_AT = '2026-11-21T23:00:00.000Z';
    function reconciled(paidAt: string) {
      let paid: ReturnType<typeof pixReceived> | undefined;
      const fake = fakeActivities({
        fetchChargeStatus: async (req) => {
          paid ??= pixReceived(req.payoutId, { paidAt });
          return {
            status: 'paid' as const,
            expiresAt: EXPIRES_AT,
            payments: [paid as Extract<typeof paid, { type: 'pix.received' }>],
          };
        },
      });
      return { fake, paid: () => paid! };
    }

    test('paid_at == expires_at, its webhook lost: settled', async () => {
      const { fake, paid } = reconciled(EXPIRES_AT);
      await withWorker(env, fake.activities, async (taskQueue) => {
        const { handle, input } = await start(taskQueue);
        // Skips to the expiry: its reconciliation finds the payment.
        await handle.signal(providerEventSignal, settlementCompleted(input.payoutId));
        expect(await handle.result()).toMatchObject({ status: 'COMPLETED', paymentEventId: paid().eventId });
        expect(fake.callsOf('recordLatePayment')).toEqual([]);
      });
    });

    test('a millisecond after expires_at: refunded as late, the payout FAILED charge_expired', async () => {
      const { fake, paid } = reconciled('2026-11-21T23:00:00.001Z');
      await withWorker(env, fake.activities, async (taskQueue) => {
        const { handle } = await start(taskQueue);
        expect(await handle.result()).toMatchObject({ status: 'FAILED', failureReason: 'charge_expired' });
        expect(fake.callsOf('recordLatePayment')).toEqual([
          [expect.objectContaining({ event: paid(), kind: 'late_payment' })],
        ]);
      });
    });
  });
});
