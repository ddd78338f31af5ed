import { ApplicationFailure } from '@temporalio/common';
import type { PayoutRecord } from '../../src/domain/payout';
import { payoutWorkflowId } from '../../src/workflows/payout.contract';
import { payoutWorkflow } from '../../src/workflows/payout.workflow';
import {
  endChildren,
  fakeActivities,
  payoutInput,
  testBundle,
  withWorker,
  useTimeSkippingEnv,
} from '../workflow/harness';

/**
 * A payout whose PIX charge could not be created was answered 502 to the partner, who never saw its
 * id: a payout.failed callback about it would be noise at best (an unknown id) and a retry trigger at
 * worst. The workflow skips it (behind patched(), so payouts started by older code replay).
 */

describe('partner callbacks for a payout the partner never saw', () => {
  const env = useTimeSkippingEnv(testBundle);

  it('sends no callback when the charge could not be created', async () => {
    const fake = fakeActivities({
      createPixCharge: async () => {
        throw ApplicationFailure.nonRetryable('refused', 'ProviderRejected');
      },
    });
    const input = payoutInput();
    const workflowId = payoutWorkflowId(input.payoutId);
    const history = await withWorker(
      env,
      fake.activities,
      async (taskQueue) => {
        const handle = await env.client.workflow.start(payoutWorkflow, {
          workflowId,
          taskQueue,
          args: [input],
        });
        const done = (await handle.result()) as PayoutRecord;
        expect(done).toMatchObject({ status: 'FAILED', failureReason: 'charge_creation_failed' });
        // The workflow has ended: every command it would ever issue is in its history.
        return handle.fetchHistory();
      },
      { children: true },
    );
    await endChildren(env, workflowId);
    const children = (history.events ?? []).filter(
      (e) => e.startChildWorkflowExecutionInitiatedEventAttributes,
    );
    expect(children).toEqual([]);
  });
});
