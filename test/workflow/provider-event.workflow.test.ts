import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowClient } from '@temporalio/client';
import type { PayoutLocation } from '../../src/adapters/db/payouts-repo';
import type { PayoutRecord } from '../../src/domain/payout';
import type { ProviderEvent } from '../../src/domain/provider-event';
import { getPayoutQuery, payoutWorkflowId, providerEventSignal } from '../../src/workflows/payout.contract';
import { providerEventWorkflowId } from '../../src/workflows/provider-event.contract';
import { payoutWorkflow } from '../../src/workflows/payout.workflow';
import { providerEventWorkflow } from '../../src/workflows/provider-event.workflow';
import {
  fakeActivities,
  payoutInput,
  pixReceived,
  settlementCompleted,
  settlementFailed,
  waitForPayout,
  startPayout,
  withWorker,
  useTimeSkippingEnv,
} from './harness';

// The webhook's durable half: fetch the event back by token, find its payout, signal it; and every
// way that can go sideways (unknown token, provider outage, foreign or not-yet-recorded payout, a
// payout that has already ended).
describe('providerEventWorkflow (time-skipping)', () => {
  const env = useTimeSkippingEnv();

  type Fake = ReturnType<typeof fakeActivities>;

  const token = () => randomUUID().replace(/-/g, '');
  const runEvent = (taskQueue: string, t = token(), client: WorkflowClient = env.client.workflow) =>
    client.execute(providerEventWorkflow, {
      workflowId: providerEventWorkflowId('sandbox', t),
      taskQueue,
      args: [{ provider: 'sandbox', token: t }],
    });
  /**
   * Waits for results without letting the test server skip time meanwhile (the test environment's
   * client unlocks time skipping while it waits): for events whose payout sits on a deadline timer.
   */
  const inRealTime = () => new WorkflowClient({ connection: env.connection, namespace: env.namespace });

  /**
   * Lets a payout run to its end (paid, settled, COMPLETED) rather than terminating it: the test
   * server leaks a time-skipping lock for some terminations (temporalio/sdk-java#1138), which would
   * make later tests wait on timers in real time.
   */
  async function finish(payout: { input: { payoutId: string }; handle: PayoutHandle }) {
    if ((await payout.handle.query(getPayoutQuery)).status === 'PENDING') {
      await payout.handle.signal(providerEventSignal, pixReceived(payout.input.payoutId));
    }
    await payout.handle.signal(providerEventSignal, settlementCompleted(payout.input.payoutId));
    expect(((await payout.handle.result()) as PayoutRecord).status).toBe('COMPLETED');
  }
  type PayoutHandle = Awaited<ReturnType<typeof env.client.workflow.start<typeof payoutWorkflow>>>;

  /** A payout workflow waiting for its payment, and where the read model says it lives. */
  async function pendingPayout(taskQueue: string) {
    const input = payoutInput();
    const handle = await startPayout(env, taskQueue, input);
    await waitForPayout(handle, (p) => p.pixCopyPaste !== '');
    const location: PayoutLocation = {
      payoutId: input.payoutId,
      workflowId: handle.workflowId,
      runId: handle.firstExecutionRunId,
      status: 'PENDING',
    };
    return { input, handle, location };
  }

  /** Fakes whose provider serves `events` (by token, in order) and whose read model holds `where`. */
  function world(events: () => ProviderEvent | null, where: () => PayoutLocation | null, more = {}): Fake {
    return fakeActivities({
      fetchProviderEvent: async () => events(),
      findPayoutWorkflow: async () => where(),
      ...more,
    });
  }

  /**
   * What the provider and the read model know, once the test's payout exists: `learn` makes the
   * read model find it and the provider's event (made by `make`) name it.
   */
  function knowledge() {
    const known = { event: null as ProviderEvent | null, location: null as PayoutLocation | null };
    return {
      event: () => known.event,
      location: () => known.location,
      learn(payout: { input: { payoutId: string }; location: PayoutLocation }, make = pixReceived) {
        known.location = payout.location;
        known.event = make(payout.input.payoutId);
        return known.event;
      },
    };
  }

  it('fetches the event by token and signals its payout, which moves to PROCESSING', async () => {
    const known = knowledge();
    const fake = world(known.event, known.location);
    await withWorker(env, fake.activities, async (taskQueue) => {
      const payout = await pendingPayout(taskQueue);
      known.learn(payout);
      const t = token();
      await expect(runEvent(taskQueue, t)).resolves.toBe('delivered');
      expect(fake.callsOf('fetchProviderEvent')).toEqual([[t]]);
      await waitForPayout(payout.handle, (p) => p.status === 'PROCESSING');
      await finish(payout);
    });
  });

  it('ends with unknown_token, and touches nothing, when the provider never knows the token over 20 minutes', async () => {
    const fake = world(
      () => null,
      () => null,
    );
    const started: number[] = [];
    await withWorker(env, fake.activities, async (taskQueue) => {
      const t = token();
      await expect(runEvent(taskQueue, t)).resolves.toBe('unknown_token');
      const history = await env.client.workflow
        .getHandle(providerEventWorkflowId('sandbox', t))
        .fetchHistory();
      for (const e of history.events ?? []) {
        // Each fetch is a local activity, recorded as a marker when its workflow task completes.
        if (e.markerRecordedEventAttributes) started.push(Number(e.eventTime!.seconds));
      }
    });
    expect(fake.callsOf('findPayoutWorkflow')).toHaveLength(0);
    expect(fake.calls.map((c) => c.name)).toEqual(Array(9).fill('fetchProviderEvent'));
    // Asked again a few times over about 20 minutes (workflow time) before it is dropped: an API Pix
    // institution's read may lag its callback by minutes.
    expect(started.at(-1)! - started[0]!).toBeGreaterThanOrEqual(19 * 60);
  });

  it('delivers an event the provider answered 404 for on the first fetches', async () => {
    const known = knowledge();
    let notYetReadable = 2;
    const fake = world(() => (notYetReadable-- > 0 ? null : known.event()), known.location);
    await withWorker(env, fake.activities, async (taskQueue) => {
      const payout = await pendingPayout(taskQueue);
      known.learn(payout);
      await expect(runEvent(taskQueue)).resolves.toBe('delivered');
      expect(fake.callsOf('fetchProviderEvent')).toHaveLength(3);
      await waitForPayout(payout.handle, (p) => p.status === 'PROCESSING');
      await finish(payout);
    });
  });

  it('keeps fetching through a provider outage and delivers the event once the provider is back', async () => {
    const known = knowledge();
    let outage = 4;
    const fake = world(() => {
      if (outage-- > 0) throw ApplicationFailure.retryable('connect ECONNREFUSED', 'ProviderUnavailable');
      return known.event();
    }, known.location);
    await withWorker(env, fake.activities, async (taskQueue) => {
      const payout = await pendingPayout(taskQueue);
      known.learn(payout);
      await expect(runEvent(taskQueue)).resolves.toBe('delivered');
      await waitForPayout(payout.handle, (p) => p.status === 'PROCESSING');
      await finish(payout);
    });
    expect(fake.callsOf('fetchProviderEvent')).toHaveLength(5);
  });

  it('gives up (logged) on an event that breaks the provider contract', async () => {
    const fake = world(
      () => {
        throw ApplicationFailure.nonRetryable('unknown event type', 'ProviderRejected');
      },
      () => null,
    );
    await withWorker(env, fake.activities, async (taskQueue) => {
      await expect(runEvent(taskQueue)).resolves.toBe('unreadable_event');
    });
  });

  it('ignores an event whose external id cannot be one of our payouts, without a lookup', async () => {
    const fake = world(
      () => pixReceived('order-12345'),
      () => null,
    );
    await withWorker(env, fake.activities, async (taskQueue) => {
      await expect(runEvent(taskQueue)).resolves.toBe('unknown_payout');
    });
    expect(fake.callsOf('findPayoutWorkflow')).toHaveLength(0);
  });

  it('waits a while for a read-model row that lags, then delivers', async () => {
    let lookups = 0;
    const known = knowledge();
    const fake = world(known.event, () => (++lookups >= 3 ? known.location() : null));
    await withWorker(env, fake.activities, async (taskQueue) => {
      const payout = await pendingPayout(taskQueue);
      known.learn(payout);
      await expect(runEvent(taskQueue)).resolves.toBe('delivered');
      await finish(payout);
    });
    expect(lookups).toBe(3);
  });

  it('gives an unknown payout id up as not ours after the bounded wait', async () => {
    const fake = world(
      () => pixReceived(randomUUID()),
      () => null,
    );
    await withWorker(env, fake.activities, async (taskQueue) => {
      await expect(runEvent(taskQueue)).resolves.toBe('unknown_payout');
    });
    expect(fake.callsOf('findPayoutWorkflow')).toHaveLength(5);
  });

  describe('for a payout whose workflow has already ended', () => {
    /** A payout that FAILED at once (the charge was refused), as the read model then shows it. */
    async function endedPayout(taskQueue: string) {
      const input = payoutInput();
      const handle = await env.client.workflow.start(payoutWorkflow, {
        workflowId: payoutWorkflowId(input.payoutId),
        taskQueue,
        args: [input],
      });
      const done = (await handle.result()) as PayoutRecord;
      expect(done.status).toBe('FAILED');
      const location: PayoutLocation = {
        payoutId: input.payoutId,
        workflowId: handle.workflowId,
        runId: handle.firstExecutionRunId,
        status: 'FAILED',
      };
      return { input, location };
    }
    const refusedCharge = {
      createPixCharge: async () => {
        throw ApplicationFailure.nonRetryable('refused', 'ProviderRejected');
      },
    };

    it('records a late payment for refund, with the state the payout ended in', async () => {
      const known = knowledge();
      let lookups = 0;
      const fake = world(
        known.event,
        // The first lookup still saw the payout PENDING (it ended just after); the reason must
        // carry the state it ended in, read again once the signal has failed.
        () => {
          const location = known.location();
          return location && (++lookups === 1 ? { ...location, status: 'PENDING' } : location);
        },
        refusedCharge,
      );
      await withWorker(env, fake.activities, async (taskQueue) => {
        known.learn(await endedPayout(taskQueue));
        await expect(runEvent(taskQueue)).resolves.toBe('late_payment');
      });
      const event = known.event();
      expect(fake.callsOf('recordLatePayment')).toEqual([
        [{ payoutId: event!.externalId, event, reason: 'payment received after the payout was FAILED' }],
      ]);
    });

    it('leaves the payment of a payout whose run ended while its row did not to an operator', async () => {
      const known = knowledge();
      // The run closed (terminated, say) while the read model still says PROCESSING: the payment may
      // be the one that settles it, so it is never returned by the policy.
      const fake = world(
        known.event,
        () => {
          const location = known.location();
          return location && { ...location, status: 'PROCESSING' };
        },
        refusedCharge,
      );
      await withWorker(env, fake.activities, async (taskQueue) => {
        known.learn(await endedPayout(taskQueue));
        await expect(runEvent(taskQueue)).resolves.toBe('late_payment');
      });
      const event = known.event();
      expect(fake.callsOf('recordLatePayment')).toEqual([
        [
          {
            payoutId: event!.externalId,
            event,
            reason: 'payment received after the payout was PROCESSING',
            kind: 'payout_unresolved',
          },
        ],
      ]);
    });

    it('raises the late-settlement alert for a completed settlement, and ignores a failed one', async () => {
      let location: PayoutLocation | null = null;
      let event: ProviderEvent | null = null;
      const fake = world(
        () => event,
        () => location,
        refusedCharge,
      );
      await withWorker(env, fake.activities, async (taskQueue) => {
        const payout = await endedPayout(taskQueue);
        location = payout.location;
        event = settlementCompleted(payout.input.payoutId);
        await expect(runEvent(taskQueue)).resolves.toBe('late_settlement');
        event = settlementFailed(payout.input.payoutId);
        await expect(runEvent(taskQueue)).resolves.toBe('ignored');
      });
      expect(fake.callsOf('alertLateSettlement')).toHaveLength(1);
      expect(fake.callsOf('recordLatePayment')).toHaveLength(0);
    });
  });

  it('applies an event once even when two tokens carry it (the payout de-duplicates on event id)', async () => {
    const known = knowledge();
    const fake = world(known.event, known.location);
    await withWorker(env, fake.activities, async (taskQueue) => {
      const payout = await pendingPayout(taskQueue);
      known.learn(payout);
      // In real time: while their results are awaited, the payout (PROCESSING) must not see its
      // settlement deadline pass.
      const client = inRealTime();
      const outcomes = await Promise.all([1, 2, 3].map(() => runEvent(taskQueue, token(), client)));
      expect(outcomes).toEqual(['delivered', 'delivered', 'delivered']);
      await waitForPayout(payout.handle, (p) => p.status === 'PROCESSING');
      await finish(payout);
    });
    expect(fake.savedStatuses()).toEqual(['PENDING', 'PENDING', 'PROCESSING', 'COMPLETED']);
    expect(fake.distinctCallsOf('requestSettlement')).toHaveLength(1);
    expect(fake.callsOf('recordLatePayment')).toHaveLength(0);
  });
});
