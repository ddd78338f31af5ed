import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ActivityFailure,
  ApplicationFailure,
  ParentClosePolicy,
  proxyActivities,
  sleep,
  startChild,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import type { CallbackActivities, CallbackAttemptOutcome } from '../activities/callback.activities';
import { BOOKKEEPING, CALLBACK_POST } from './activity-options';
import {
  callbackEventFor,
  callbackEventId,
  callbackRetryDelayMs,
  callbackWorkflowId,
  resolveCallbackRetry,
  type CallbackRetryPolicy,
} from '../domain/callback-event';
import type { PayoutRecord } from '../domain/payout';
import type { CallbackDeliveryInput, CallbackDeliveryResult } from './callback.contract';

const bookkeeping = proxyActivities<Pick<CallbackActivities, 'givePartnerCallbackUp'>>(BOOKKEEPING);
const sending = proxyActivities<Pick<CallbackActivities, 'sendPartnerCallback'>>(CALLBACK_POST);

/**
 * Delivers one partner callback at least once (docs/decisions.md D22): POST until a 2xx, with
 * exponential backoff on durable timers, for `giveUpAfterMs` (24 h) from the first attempt; one
 * last attempt is made at the deadline. A partner without a callback URL at send time gets none.
 */
export async function callbackDeliveryWorkflow(
  input: CallbackDeliveryInput,
): Promise<CallbackDeliveryResult> {
  let policy: CallbackRetryPolicy;
  try {
    policy = resolveCallbackRetry(input.retry);
  } catch (err) {
    // Bad input cannot heal on retry: fail the workflow rather than its task, forever.
    throw ApplicationFailure.nonRetryable((err as Error).message, 'InvalidCallbackInput');
  }
  const ref = {
    eventId: input.eventId,
    partnerId: input.payout.partnerId,
    payoutId: input.payout.id,
    event: input.event,
  };
  const startedAt = Date.now(); // workflow time: deterministic on replay
  const deadline = startedAt + policy.giveUpAfterMs;
  const result = (outcome: CallbackDeliveryResult['outcome'], attempts: number): CallbackDeliveryResult => ({
    outcome,
    attempts,
    startedAt: new Date(startedAt).toISOString(),
    finishedAt: new Date(Date.now()).toISOString(),
  });

  for (let attempt = 1; ; attempt++) {
    let outcome: CallbackAttemptOutcome;
    try {
      outcome = await sending.sendPartnerCallback({ ...ref, attempt, payout: input.payout });
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      // Our own side failed for a while; that must not end the partner's retry window early.
      outcome = { kind: 'failed', error: err.cause?.message ?? err.message };
    }
    if (outcome.kind === 'delivered') return result('delivered', attempt);
    if (outcome.kind === 'not_configured') return result('not_configured', attempt - 1);

    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      await bookkeeping.givePartnerCallbackUp({ ...ref, attempts: attempt });
      return result('gave_up', attempt);
    }
    await sleep(Math.min(callbackRetryDelayMs(attempt, policy), remaining));
  }
}

/**
 * Called by the payout workflow once the payout is COMPLETED or FAILED. The delivery runs as a
 * child that outlives the payout (ABANDON): the payout is final and its workflow may close while
 * the partner is still being retried. The workflow id is derived from payout and event and a
 * duplicate is rejected, so the callback is started once however often this is reached.
 */
export async function startPartnerCallback(payout: PayoutRecord): Promise<void> {
  const event = callbackEventFor(payout.status);
  if (event === null) return;
  try {
    await startChild(callbackDeliveryWorkflow, {
      workflowId: callbackWorkflowId(payout.id, event),
      args: [{ eventId: callbackEventId(payout.id, event), event, payout }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return;
    throw err;
  }
}
