/**
 * The refund workflow's contract: one workflow per refund case, started (as an abandoned child) by
 * the workflow that opened the case, under refundWorkflowId. It returns the payment through the
 * provider, or waits for an operator's approval first (the policy, REFUND_AUTO_RETURN_KINDS).
 */
import { defineUpdate } from '@temporalio/workflow';

export interface RefundWorkflowInput {
  caseId: string;
  /** Set by a run that waited long and continued as new (src/workflows/hand-over.ts): where the case stands. */
  handOver?: RefundHandOver;
}

/**
 * What a refund run hands to the next: the case waits for an operator's approval, or its return is
 * `returning` at the provider since `since` (workflow time), read again after `pollMs`.
 */
export type RefundHandOver =
  { phase: 'awaiting_approval' } | { phase: 'returning'; since: number; pollMs: number };

/**
 * returned / refused: the provider's final answer; resolved_by_hand: an operator resolved the case
 * while it waited for approval; left_to_operator: the PIX provider cannot return payments.
 */
export type RefundOutcome = 'returned' | 'refused' | 'resolved_by_hand' | 'left_to_operator';

/** One workflow per case: derived from the case id, a duplicate start is rejected. */
export function refundWorkflowId(caseId: string): string {
  return `refund-case-${caseId.toLowerCase()}`;
}

export interface RefundApproval {
  /** Who approved, kept with the case. */
  by: string;
}

/**
 * `admin refunds approve`: accepted only while the case awaits approval; answers the case's status
 * once the approval is recorded: `returning` (the return is being asked for), or `resolved` when an
 * operator resolved it by hand first.
 */
export const approveRefundUpdate = defineUpdate<string, [RefundApproval]>('approveRefund');

/** The update's refusal type: the case does not await approval. */
export const REFUND_NOT_AWAITING_APPROVAL = 'RefundNotAwaitingApproval';
