import {
  ApplicationFailure,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import {
  findRefundCase,
  listRefundCases,
  payoutSettledByPayment,
  resolveRefundCase,
  type RefundCase,
  type RefundCaseChange,
} from '../adapters/db/refund-cases-repo';
import { findSettlementsAfterEnd, refundHeldBySettlement } from '../adapters/db/settlements-after-end-repo';
import { findPayoutLocation, type PayoutLocation } from '../adapters/db/payouts-repo';
import type { Db } from '../adapters/db/pool';
import { isTerminal } from '../domain/payout';
import { isUuid } from '../domain/ids';
import {
  approveRefundUpdate,
  REFUND_NOT_AWAITING_APPROVAL,
  refundWorkflowId,
} from '../workflows/refund.contract';
import { requireOption, str, UsageError, type Commands, type Values } from './command';

/** `refunds …`: refund cases (PIX received and not settled), approved or resolved by an operator. */

export const REFUND_COMMANDS: Commands = {
  'refunds list': {
    args: '[--all]',
    summary: 'list unfinished refund cases (PIX received and not settled), oldest first',
    details:
      'Prints {"refund_cases": [{"id", "payout_id", "charge_id", "event_id", "amount_brl", "reason", "kind",\n' +
      '"status", "return_id", "refusal_reason", "approved_by", "created_at", "status_changed_at", "resolved_at",\n' +
      '"resolution_note", "changes": [{"status", "at", "detail"}]}]}. status: open, awaiting_approval, returning,\n' +
      'returned, refused or resolved (by hand). Without --all: every case not returned nor resolved.\n' +
      'docs/operations.md#refund-cases says what to do in each status.',
    options: { all: { type: 'boolean' } },
    plan: (values) => async (db) => ({
      refund_cases: (await listRefundCases(db, { all: values.all === true })).map(refundCaseView),
    }),
  },
  'refunds approve': {
    uses: 'database+temporal',
    args: '--id <refund_case_id> [--by <who>]',
    summary: 'return the payment of a refund case that awaits approval',
    details:
      'Only a case in status awaiting_approval (its kind is not in REFUND_AUTO_RETURN_KINDS). Its refund\n' +
      'workflow records who approved and asks the provider to return the payment; prints the case once it\n' +
      'is returning. Approving again is harmless. Refused, naming the transaction, while the provider has\n' +
      "reported USDT sent for the case's payout after it ended (docs/operations.md#settlement-reported-after-the-payout-ended),\n" +
      'for a case whose payment its payout COMPLETED with (a run before a reset opened it: nothing to return),\n' +
      'and while the payout has ended but its workflow runs again (a reset: the payment may yet settle it).',
    options: { id: str, by: str },
    plan(values) {
      const id = requireRefundCaseId(values);
      const by = typeof values.by === 'string' ? values.by : 'admin';
      if (by.length > 200) throw new UsageError('--by must be at most 200 characters');
      return async (db, temporal) => {
        const caseId = id.toLowerCase();
        const found = await findRefundCase(db, caseId);
        if (found === null) throw new Error(`no refund case ${id}`);
        await refuseIfSettled(db, id, found);
        if (found.status === 'open') {
          throw new Error(
            `refund case ${id} is open: its workflow has not applied the policy, or the PIX provider cannot return payments (resolve it by hand)`,
          );
        }
        // Approved before (the workflow may have ended since): the same approval, nothing more to do.
        if (found.approvedBy !== null) return refundCaseView(found);
        if (found.status !== 'awaiting_approval') {
          throw new Error(`refund case ${id} is ${found.status}: it does not await approval`);
        }
        await refuseWhileItsPayoutRunsAgain(temporal, id, await findPayoutLocation(db, found.payoutId));
        try {
          await temporal.workflow
            .getHandle(refundWorkflowId(caseId))
            .executeUpdate(approveRefundUpdate, { args: [{ by }], updateId: `approve-${caseId}` });
        } catch (err) {
          const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
          if (cause instanceof ApplicationFailure && cause.type === REFUND_NOT_AWAITING_APPROVAL) {
            throw new Error(`refund case ${id} not approved: ${cause.message}`);
          }
          if (err instanceof WorkflowNotFoundError)
            throw new Error(`refund case ${id} has no running workflow`);
          throw err;
        }
        const after = await findRefundCase(db, caseId);
        // A report recorded since the look above: the workflow's claim refused the approval.
        if (after?.status === 'awaiting_approval') await refuseIfSettled(db, id, found);
        return refundCaseView(after ?? found);
      };
    },
  },
  'refunds resolve': {
    args: '--id <refund_case_id> --note <text>',
    summary: 'mark a refund case resolved by hand, with a note of what was done',
    details:
      'Prints the case. Only a case with no return on its way: open, awaiting_approval or refused (a\n' +
      'returning case is followed by its workflow until the provider answers). A case already resolved keeps\n' +
      'its first resolution and note.',
    options: { id: str, note: str },
    plan(values) {
      const id = requireRefundCaseId(values);
      const note = requireOption(values, 'note');
      if (note.length > 2000) throw new UsageError('--note must be at most 2000 characters');
      return async (db) => {
        const resolved = await resolveRefundCase(db, id.toLowerCase(), note);
        if (resolved === null) throw new Error(`no refund case ${id}`);
        if (resolved.status !== 'resolved') {
          throw new Error(
            `refund case ${id} is ${resolved.status}: not resolved (no hand resolution once returning or returned)`,
          );
        }
        return refundCaseView(resolved);
      };
    },
  },
};

/**
 * BRL is not returned while USDT may have left for the payout: the refusal names its transactions, or
 * the payout the payment settled (a case opened by a run before a reset whose new run completed).
 */
async function refuseIfSettled(db: Db, id: string, found: RefundCase): Promise<void> {
  const reports = await findSettlementsAfterEnd(db, found.payoutId);
  if (reports.length > 0)
    throw new Error(`refund case ${id} not approved: ${refundHeldBySettlement(reports)}`);
  const settled = await payoutSettledByPayment(db, found.eventId);
  if (settled !== null) {
    throw new Error(
      `refund case ${id} not approved: its payment settled payout ${settled} (COMPLETED), so the payer got the USDT: nothing to return (its workflow resolves the case)`,
    );
  }
}

/**
 * A payout that ended (so the read model says) whose workflow runs again was reset by an operator: the
 * new run may yet settle the payment, so its refund cases wait until it has ended (D90).
 */
async function refuseWhileItsPayoutRunsAgain(
  temporal: Client,
  id: string,
  payout: PayoutLocation | null,
): Promise<void> {
  if (payout === null || !isTerminal(payout.status)) return;
  const described = await temporal.workflow
    .getHandle(payout.workflowId)
    .describe()
    .catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    });
  if (described?.status.name === 'RUNNING') {
    throw new Error(
      `refund case ${id} not approved: payout ${payout.payoutId} is ${payout.status}, but its workflow runs again (a reset?) and may yet settle the payment: approve once it has ended`,
    );
  }
}

/** --id as given (messages name it so), checked to be a refund case id. */
function requireRefundCaseId(values: Values): string {
  const id = requireOption(values, 'id');
  if (!isUuid(id)) throw new UsageError('--id must be a refund case id (a UUID)');
  return id;
}

function refundCaseView(c: RefundCase & { changes?: RefundCaseChange[] }) {
  return {
    id: c.id,
    payout_id: c.payoutId,
    charge_id: c.chargeId,
    event_id: c.eventId,
    amount_brl: c.amountBrl,
    reason: c.reason,
    kind: c.kind,
    status: c.status,
    return_id: c.returnId,
    refusal_reason: c.refusalReason,
    approved_by: c.approvedBy,
    created_at: c.createdAt,
    status_changed_at: c.statusChangedAt,
    resolved_at: c.resolvedAt,
    resolution_note: c.resolutionNote,
    ...(c.changes !== undefined && { changes: c.changes }),
  };
}
