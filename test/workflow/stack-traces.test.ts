import { historyOf } from '../support/history';
import { cancelPayoutUpdate, getPayoutQuery } from '../../src/workflows/payout.contract';
import {
  fakeActivities,
  payoutInput,
  startPayout,
  useTimeSkippingEnv,
  waitForPayout,
  withWorker,
} from './harness';

// The Web UI's "Stack Trace" tab asks a workflow for its `__stack_trace` query. The service's worker
// runs without the SDK's per-promise stack capture unless WORKER_WORKFLOW_STACK_TRACES turns it on
// (src/temporal/workflow-threads.ts, docs/decisions.md D82).
describe('workflow stack traces', () => {
  const env = useTimeSkippingEnv();

  /** The stack-trace query's answer (or failure) for a payout waiting for its payment. */
  async function stackTraceOfWaitingPayout(
    stackTraces?: boolean,
  ): Promise<{ stack?: string; failure?: string; status: string; cancelled?: string; failedTasks: number }> {
    return withWorker(
      env,
      fakeActivities().activities,
      async (taskQueue) => {
        const handle = await startPayout(env, taskQueue, payoutInput());
        await waitForPayout(handle, (p) => p.providerChargeId !== undefined);
        const answer = await handle.query<string>('__stack_trace').then(
          (stack) => ({ stack }),
          (err: unknown) => ({ failure: err instanceof Error ? err.message : String(err) }),
        );
        // The workflow itself is unaffected: it answers its own query, and runs an update (the SDK
        // runs update handlers in an AsyncLocalStorage, which needs V8's promise hooks).
        const status = (await handle.query(getPayoutQuery)).status;
        const cancelled = await handle.executeUpdate(cancelPayoutUpdate);
        // Not after a failed workflow task either (retried, it would have hidden a thread that breaks).
        const failedTasks = (await historyOf(handle)).filter((e) => e.workflowTaskFailedEventAttributes);
        return { ...answer, status, cancelled: cancelled.failureReason, failedTasks: failedTasks.length };
      },
      stackTraces === undefined ? {} : { stackTraces },
    );
  }

  // The SDK's answer ("Workflow stack traces are not enabled on this worker") is a failure, which
  // the service's failure converter encodes as it does every failure (failure-converter.ts).
  const OFF = { failure: 'Encoded failure', status: 'PENDING', cancelled: 'cancelled', failedTasks: 0 };

  it('are off by default: the query fails, and the payout runs', async () => {
    expect(await stackTraceOfWaitingPayout()).toEqual(OFF);
  });

  it('on, show where the payout waits; a worker created after it with them off has them off', async () => {
    const on = await stackTraceOfWaitingPayout(true);
    expect(on.failure).toBeUndefined();
    expect(on.failedTasks).toBe(0);
    expect(on.stack).toMatch(/payout/i);
    expect(await stackTraceOfWaitingPayout(false)).toEqual(OFF);
  });
});
