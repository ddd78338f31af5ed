import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ApplicationFailure,
  condition,
  continueAsNew,
  log,
  ParentClosePolicy,
  proxyActivities,
  setHandler,
  sleep,
  startChild,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import type { RefundActivities } from '../activities/refund.activities';
import { lookCapAfter, LONG_WAIT_AFTER_MS } from '../domain/long-waits';
import { BOOKKEEPING, REFUND_PROVIDER } from './activity-options';
import { boundsItsWaits, timeToHandOver } from './hand-over';
import {
  approveRefundUpdate,
  REFUND_NOT_AWAITING_APPROVAL,
  refundWorkflowId,
  type RefundApproval,
  type RefundHandOver,
  type RefundOutcome,
  type RefundWorkflowInput,
} from './refund.contract';

const bookkeeping =
  proxyActivities<Pick<RefundActivities, 'beginRefund' | 'approveRefund' | 'refundCaseStatus'>>(BOOKKEEPING);
const provider = proxyActivities<Pick<RefundActivities, 'requestReturn' | 'checkReturn'>>(REFUND_PROVIDER);

/** Between reads of a return's status: quick at first (most returns settle in seconds), then capped. */
const FIRST_POLL_MS = 2_000;
const MAX_POLL_MS = 5 * 60_000;

/** How often a case waiting for approval looks whether an operator resolved it by hand meanwhile. */
const RESOLVED_BY_HAND_CHECK = '1 hour';

/**
 * One refund case, from open to its end (docs/decisions.md D62): the policy decides whether the
 * payment goes back at once or waits for `admin refunds approve`; the provider is asked to return it
 * under the case's id (idempotent there, so a redone activity is the same return), then its status is
 * read with backoff until final. Every change is recorded by the activities. A status that cannot be
 * read keeps the case `returning` (D33): only the provider's own answer makes it `refused`.
 */
export async function refundWorkflow(input: RefundWorkflowInput): Promise<RefundOutcome> {
  const { caseId, handOver } = input;
  // Handed over while awaiting approval: an approval sent during the hand-over reaches this run's
  // first task, whose validator runs before the code below.
  let awaiting = handOver?.phase === 'awaiting_approval';
  let approvedBy: string | undefined;
  /** The case's status once the approval is recorded: what the update answers. */
  let afterApproval: string | undefined;
  setHandler(
    approveRefundUpdate,
    async (approval: RefundApproval): Promise<string> => {
      approvedBy ??= approval.by;
      await condition(() => afterApproval !== undefined);
      return afterApproval ?? 'returning';
    },
    {
      validator: (_approval: RefundApproval) => {
        if (!awaiting && approvedBy === undefined) {
          throw ApplicationFailure.nonRetryable(
            'the case does not await approval',
            REFUND_NOT_AWAITING_APPROVAL,
          );
        }
      },
    },
  );
  /** The long wait goes on in a new run (src/workflows/hand-over.ts): this one ends here. */
  const handOverAs = (next: RefundHandOver) =>
    continueAsNew<typeof refundWorkflow>({ caseId, handOver: next });

  let returning = handOver?.phase === 'returning' ? handOver : undefined;
  if (returning === undefined) {
    const begun = handOver === undefined ? await bookkeeping.beginRefund(caseId) : 'awaiting_approval';
    if (begun === 'left_to_operator' || begun === 'finished') return finishedAs(begun, caseId);
    if (begun === 'awaiting_approval') {
      awaiting = true;
      let by: string | undefined;
      for (;;) {
        by = approvedBy;
        if (by !== undefined) break;
        if (await condition(() => approvedBy !== undefined, RESOLVED_BY_HAND_CHECK)) continue;
        if ((await bookkeeping.refundCaseStatus(caseId)) === 'resolved') return 'resolved_by_hand';
        if (timeToHandOver()) await handOverAs({ phase: 'awaiting_approval' });
      }
      awaiting = false;
      afterApproval = await bookkeeping.approveRefund({ caseId, by });
      if (afterApproval === 'resolved') return 'resolved_by_hand';
    }
    const answer = await provider.requestReturn(caseId);
    if (answer !== 'returning') return answer === 'resolved' ? 'resolved_by_hand' : answer;
    returning = { phase: 'returning', since: Date.now(), pollMs: FIRST_POLL_MS };
  }
  return awaitReturn(caseId, returning, handOverAs);
}

/**
 * Reads the return's status with backoff until the provider's answer is final; past a day it reads
 * once an hour (src/domain/long-waits.ts), and a long wait hands over to a new run.
 */
async function awaitReturn(
  caseId: string,
  from: Extract<RefundHandOver, { phase: 'returning' }>,
  handOverAs: (next: RefundHandOver) => Promise<never>,
): Promise<RefundOutcome> {
  let delay = from.pollMs;
  for (;;) {
    await sleep(delay);
    const answer = await provider.checkReturn(caseId);
    if (answer !== 'returning') return answer === 'resolved' ? 'resolved_by_hand' : answer;
    const long = Date.now() - from.since >= LONG_WAIT_AFTER_MS && boundsItsWaits();
    delay = Math.min(delay * 2, long ? lookCapAfter(Date.now() - from.since, MAX_POLL_MS) : MAX_POLL_MS);
    if (timeToHandOver()) await handOverAs({ phase: 'returning', since: from.since, pollMs: delay });
  }
}

async function finishedAs(begun: 'left_to_operator' | 'finished', caseId: string): Promise<RefundOutcome> {
  if (begun === 'left_to_operator') return 'left_to_operator';
  // Started again for a case that had already ended (a second opening path): its end is the answer.
  const status = await bookkeeping.refundCaseStatus(caseId);
  log.info('refund case already finished', { caseId, status });
  return status === 'returned' ? 'returned' : status === 'refused' ? 'refused' : 'resolved_by_hand';
}

/**
 * Called where a refund case is opened (the payout workflow, the provider-event workflow). The refund
 * runs as a child that outlives its parent (ABANDON): a payout ends long before its refunds may. Its id
 * is derived from the case and a duplicate is rejected, so a case gets one refund workflow however
 * often this is reached.
 */
export async function startRefundWorkflow(caseId: string): Promise<void> {
  try {
    await startChild(refundWorkflow, {
      workflowId: refundWorkflowId(caseId),
      args: [{ caseId }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return;
    throw err;
  }
}
