/**
 * The partner-callback workflow's contract: one workflow per callback event, started by the payout
 * workflow as an abandoned child when the payout ends. Its workflow id is callbackWorkflowId.
 */
import type { CallbackEvent, CallbackRetryPolicy } from '../domain/callback-event';
import type { PayoutRecord } from '../domain/payout';

export interface CallbackDeliveryInput {
  eventId: string;
  event: CallbackEvent;
  /** The payout as it reached its terminal state; the body is its partner-facing shape. */
  payout: PayoutRecord;
  /** Defaults to DEFAULT_CALLBACK_RETRY (24 h); tests shorten it. */
  retry?: Partial<CallbackRetryPolicy>;
}

export interface CallbackDeliveryResult {
  outcome: 'delivered' | 'gave_up' | 'not_configured';
  attempts: number;
  /** Workflow time, so the give-up can be checked against the policy. */
  startedAt: string;
  finishedAt: string;
}
