import { ApplicationFailure } from '@temporalio/activity';
import {
  findRefundCase,
  moveRefundCase,
  payoutSettledByPayment,
  setRefundReturnId,
  type RefundCase,
  type RefundCaseStatus,
} from '../adapters/db/refund-cases-repo';
import type { Db } from '../adapters/db/pool';
import {
  findSettlementsAfterEnd,
  refundHeldBySettlement,
  type SettlementAfterEnd,
} from '../adapters/db/settlements-after-end-repo';
import { ProviderError, type PaymentReturn, type PaymentReturns } from '../adapters/provider/types';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';

/** Which refund kinds return by themselves (REFUND_AUTO_RETURN_KINDS); every other kind waits. */
export interface RefundPolicy {
  autoReturnKinds: readonly string[];
}

/** What a refund workflow does next with its case. */
export type RefundStart = 'return' | 'awaiting_approval' | 'left_to_operator' | 'finished';

/** The state of a case's return after a step: `returning` until the provider's final answer. */
export type ReturnProgress = 'returning' | 'returned' | 'refused' | 'resolved';

const FINISHED: readonly RefundCaseStatus[] = ['returned', 'refused', 'resolved'];

/**
 * The failure of a return that is held: its payout has a settlement report after its end on record
 * (USDT may have left). Retried, so the case's workflow waits in its return step until an operator
 * resolves the case by hand, which ends it.
 */
export const REFUND_HELD = 'RefundHeld';

/**
 * The refund workflow's activities (src/workflows/refund.workflow.ts): the policy, the approval, the
 * provider's return and every change of the case, recorded in refund_cases. Each is safe to run
 * again: the case's status guards every move, and the provider returns a payment once per refund id.
 */
export function createRefundActivities({
  db,
  returns,
  policy,
  logger,
  metrics,
}: {
  db: Db;
  /** Absent where the PIX provider cannot return payments: every case then waits for an operator. */
  returns?: PaymentReturns | undefined;
  policy: RefundPolicy;
  logger: Logger;
  metrics: Metrics;
}) {
  async function load(caseId: string): Promise<RefundCase> {
    const found = await findRefundCase(db, caseId);
    // The case is written before its workflow starts: missing, it is not readable yet.
    if (found === null)
      throw ApplicationFailure.retryable(`no refund case ${caseId}`, 'RefundCaseUnreadable');
    return found;
  }

  async function move(refundCase: RefundCase, m: Parameters<typeof moveRefundCase>[2]): Promise<RefundCase> {
    const result = await moveRefundCase(db, refundCase.id, m);
    if (result === null)
      throw ApplicationFailure.retryable(`no refund case ${refundCase.id}`, 'RefundCaseUnreadable');
    if (result.moved) {
      metrics.refundCaseTransitions.inc({ status: m.to });
      const fields = {
        event: 'refund_case_changed',
        caseId: refundCase.id,
        payoutId: refundCase.payoutId,
        status: m.to,
        amountBrl: refundCase.amountBrl,
        ...(result.refundCase.returnId !== null && { returnId: result.refundCase.returnId }),
        ...(m.detail !== undefined && { detail: m.detail }),
        ...(m.refusalReason !== undefined && { refusalReason: m.refusalReason }),
      };
      if (m.to === 'refused')
        logger.error(fields, 'refund refused by the provider: the payer has not got the money back');
      else logger.info(fields, 'refund case changed');
    }
    return result.refundCase;
  }

  /**
   * A case whose payout has a settlement report after its end is not returned, whatever its kind:
   * the BRL may have bought USDT that left. Held where the policy holds a case, `awaiting_approval`
   * (listed, alerted by RefundAwaitingOperator), with the reports in the change's detail; `admin
   * refunds approve` refuses it while the report is on record.
   */
  async function hold(refundCase: RefundCase, reports: SettlementAfterEnd[]): Promise<RefundCase> {
    const reason = refundHeldBySettlement(reports);
    const held = await move(refundCase, {
      from: ['open'],
      to: 'awaiting_approval',
      detail: `held: ${reason}`,
    });
    logger.error(
      {
        event: 'refund_case_held',
        caseId: refundCase.id,
        payoutId: refundCase.payoutId,
        amountBrl: refundCase.amountBrl,
        txHashes: reports.map((r) => r.txHash),
      },
      'refund case held: USDT was reported sent for its payout after it ended',
    );
    return held;
  }

  /**
   * A case whose payment is the one a COMPLETED payout settled (opened by a run before an operator's
   * reset, whose new run completed with that payment): the payer got the USDT, so nothing is returned
   * and the case is resolved, saying so. Undefined while the payment settles no payout.
   */
  async function settledItsPayout(refundCase: RefundCase): Promise<RefundCase | undefined> {
    const settled = await payoutSettledByPayment(db, refundCase.eventId);
    if (settled === null) return undefined;
    const note = `not returned: this payment settled payout ${settled} (COMPLETED), so the payer got the USDT`;
    logger.warn(
      { event: 'refund_case_payment_settled', caseId: refundCase.id, payoutId: refundCase.payoutId, settled },
      'refund case resolved: its payment settled a completed payout (a run before a reset opened it)',
    );
    return move(refundCase, { from: ['open', 'awaiting_approval'], to: 'resolved', resolutionNote: note });
  }

  /** The provider's answer about a return, recorded: its id, and its end once final. */
  async function record(refundCase: RefundCase, answer: PaymentReturn): Promise<ReturnProgress> {
    if (refundCase.returnId !== answer.returnId) await setRefundReturnId(db, refundCase.id, answer.returnId);
    if (answer.status === 'returning') return 'returning';
    const ended = await move(
      { ...refundCase, returnId: answer.returnId },
      answer.status === 'returned'
        ? { from: ['returning'], to: 'returned', detail: `returned to the payer (return ${answer.returnId})` }
        : { from: ['returning'], to: 'refused', refusalReason: answer.refusalReason ?? 'refused' },
    );
    return progressOf(ended.status);
  }

  function providerFailure(operation: string, refundCase: RefundCase, err: unknown): never {
    if (!(err instanceof ProviderError)) throw err;
    // Never a verdict (D33): a refusal of the request or an unreadable status leaves the return as it
    // is, asked again with backoff; the case stays `returning` and RefundReturningTooLong says so.
    const fields = { event: 'refund_provider_error', caseId: refundCase.id, code: err.code, operation };
    if (err.retryable) logger.warn(fields, 'refund: provider unavailable, will retry');
    else logger.error(fields, 'refund: the provider refused the call; retried until an operator looks');
    throw ApplicationFailure.retryable(err.message, 'ProviderUnavailable');
  }

  return {
    /** Applies the policy to an open case; a case past that point says where it is. */
    async beginRefund(caseId: string): Promise<RefundStart> {
      const refundCase = await load(caseId);
      if (FINISHED.includes(refundCase.status)) return 'finished';
      if (refundCase.status === 'returning') return 'return';
      if (refundCase.status === 'awaiting_approval') return 'awaiting_approval';
      if (await settledItsPayout(refundCase)) return 'finished';
      // Ahead of the policy, and of the PIX provider's means: an operator returning a case by hand reads the hold too.
      const reports = await findSettlementsAfterEnd(db, refundCase.payoutId);
      if (reports.length > 0) {
        const held = await hold(refundCase, reports);
        return held.status === 'awaiting_approval' ? 'awaiting_approval' : 'finished';
      }
      if (returns === undefined) {
        logger.warn(
          { event: 'refund_case_manual', caseId },
          'refund case left to an operator: the PIX provider cannot return payments',
        );
        return 'left_to_operator';
      }
      if (refundCase.kind !== null && policy.autoReturnKinds.includes(refundCase.kind)) return 'return';
      const waiting = await move(refundCase, {
        from: ['open'],
        to: 'awaiting_approval',
        detail: `kind ${refundCase.kind ?? 'unknown'} waits for approval (REFUND_AUTO_RETURN_KINDS)`,
      });
      return waiting.status === 'awaiting_approval' ? 'awaiting_approval' : 'finished';
    },

    /**
     * An operator's approval, recorded: the case is `returning` from now on (or as an operator left
     * it). A payout's settlement report after its end, on record since the CLI looked, keeps it
     * `awaiting_approval` (the claim refuses it); the return step then holds it. A payment that settled
     * its payout resolves it (settledItsPayout).
     */
    async approveRefund(a: { caseId: string; by: string }): Promise<RefundCaseStatus> {
      const refundCase = await load(a.caseId);
      const moved = await move(refundCase, {
        from: ['awaiting_approval'],
        to: 'returning',
        approvedBy: a.by,
        detail: `approved by ${a.by}`,
      });
      if (moved.status === 'awaiting_approval') {
        const resolved = await settledItsPayout(moved);
        if (resolved) return resolved.status;
        logger.error(
          { event: 'refund_case_held', caseId: a.caseId, payoutId: refundCase.payoutId, by: a.by },
          'refund approval not taken: USDT was reported sent for its payout after it ended',
        );
      }
      return moved.status;
    },

    /**
     * Claims the case (`returning`) and asks the provider to return the payment under the case's id.
     * Run again (a crashed worker, a lost answer), the claim is already there and the provider answers
     * with the return it already has: one return per case.
     */
    async requestReturn(caseId: string): Promise<ReturnProgress> {
      if (returns === undefined) throw ApplicationFailure.nonRetryable('no provider returns', 'NoReturns');
      let refundCase = await load(caseId);
      if (refundCase.status === 'open') {
        refundCase = await move(refundCase, { from: ['open'], to: 'returning', detail: 'return requested' });
      }
      // Unclaimed: a settlement report after the payout's end came after the policy's look (or before
      // an approval was taken), and the claim refused the case. It is held; never asked of the provider.
      if (refundCase.status === 'open' || refundCase.status === 'awaiting_approval') {
        const resolved = await settledItsPayout(refundCase);
        if (resolved) return progressOf(resolved.status);
        const reports = await findSettlementsAfterEnd(db, refundCase.payoutId);
        if (reports.length > 0) {
          if (refundCase.status === 'open') await hold(refundCase, reports);
          throw ApplicationFailure.retryable(
            `refund case ${caseId} held: ${refundHeldBySettlement(reports)}`,
            REFUND_HELD,
          );
        }
      }
      if (refundCase.status !== 'returning') return progressOf(refundCase.status);
      let answer: PaymentReturn;
      try {
        answer = await returns.requestReturn({
          refundId: refundCase.id,
          eventId: refundCase.eventId,
          amountBrl: refundCase.amountBrl,
          reason: refundCase.reason,
        });
      } catch (err) {
        providerFailure('requestReturn', refundCase, err);
      }
      return record(refundCase, answer);
    },

    /** The return's status now, recorded once final. */
    async checkReturn(caseId: string): Promise<ReturnProgress> {
      if (returns === undefined) throw ApplicationFailure.nonRetryable('no provider returns', 'NoReturns');
      const refundCase = await load(caseId);
      if (refundCase.status !== 'returning') return progressOf(refundCase.status);
      let answer: PaymentReturn;
      try {
        answer =
          refundCase.returnId === null
            ? await returns.requestReturn({
                refundId: refundCase.id,
                eventId: refundCase.eventId,
                amountBrl: refundCase.amountBrl,
                reason: refundCase.reason,
              })
            : await returns.getReturn({
                refundId: refundCase.id,
                eventId: refundCase.eventId,
                returnId: refundCase.returnId,
              });
      } catch (err) {
        providerFailure('checkReturn', refundCase, err);
      }
      return record(refundCase, answer);
    },

    /** The case's status; one waiting whose payment settled its payout is resolved first (settledItsPayout). */
    async refundCaseStatus(caseId: string): Promise<RefundCaseStatus> {
      const refundCase = await load(caseId);
      if (refundCase.status !== 'open' && refundCase.status !== 'awaiting_approval') return refundCase.status;
      return ((await settledItsPayout(refundCase)) ?? refundCase).status;
    },
  };
}

/** A case that has left `returning` another way (an operator) is reported as it is. */
function progressOf(status: RefundCaseStatus): ReturnProgress {
  if (status === 'returned' || status === 'refused' || status === 'resolved') return status;
  return 'returning';
}

export type RefundActivities = ReturnType<typeof createRefundActivities>;
