import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  cancelPayoutUpdate,
  PAYOUT_NOT_CANCELLABLE,
  providerEventSignal,
} from '../../src/workflows/payout.contract';
import { createTimeSkippingEnv } from '../support/temporal';
import {
  fakeActivities,
  gate,
  isolatedBundle,
  payoutInput,
  pixReceived,
  settlementCompleted,
  waitForPayout,
  startPayout,
  withWorker,
} from './harness';

// The cancel decision of the payout workflow on the time-skipping server: one decision between the
// partner's cancel and the payment, whichever the provider saw first.
describe('payoutWorkflow cancelPayout update', () => {
  let env: TestWorkflowEnvironment;

  beforeAll(async () => {
    env = await createTimeSkippingEnv();
    await isolatedBundle();
  }, 60_000);
  afterAll(() => env?.teardown());

  async function start(taskQueue: string) {
    const input = payoutInput();
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
});
