import type { PayoutLocation } from '../adapters/db/payouts-repo';
import { findPayoutLocation, upsertPayout } from '../adapters/db/payouts-repo';
import type { Db } from '../adapters/db/pool';
import { openRefundCase, type OpenRefundCaseResult } from '../adapters/db/refund-cases-repo';
import { recordSettlementAfterEnd } from '../adapters/db/settlements-after-end-repo';
import { PAYOUT_STATUSES, type PayoutRecord } from '../domain/payout';
import type { ProviderEvent } from '../domain/provider-event';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { isUuid } from '../domain/ids';
import { REFUND_KINDS, type RefundKind } from '../domain/refund';
import {
  clearAttention,
  raiseAttention,
  recordOperatorDecision,
  WAITING_KINDS,
  type AttentionKind,
  type OperatorDecision,
} from '../adapters/db/attention-repo';

export { REFUND_KINDS, type RefundKind } from '../domain/refund';

/**
 * Payout bookkeeping: the read model, refund cases and the alerts raised along a payout's life.
 * Quick database writes and log lines, retried until they succeed.
 */
export function createPayoutBookkeepingActivities({
  db,
  logger,
  metrics,
}: {
  db: Db;
  logger: Logger;
  metrics: Metrics;
}) {
  // Every kind's series exists from the start at 0: Prometheus' increase() (the PayoutRefundDue
  // alert) cannot see the first refund case of a series that first appears already at 1.
  for (const kind of REFUND_KINDS) metrics.refundCasesOpened.inc({ kind }, 0);
  // Likewise for SettlementReportedAfterEnd: every status a payout can have when the report comes.
  for (const status of PAYOUT_STATUSES) metrics.settlementsAfterEnd.inc({ status }, 0);
  return {
    async recordPayout(payout: PayoutRecord, workflowId: string, runId: string): Promise<void> {
      await upsertPayout(db, payout, workflowId, runId);
      // An ended payout waits on nothing: whatever any of its runs or attempts raised is answered.
      if (payout.status === 'COMPLETED' || payout.status === 'FAILED') {
        await clearAttention(db, {
          payoutId: payout.id,
          kinds: WAITING_KINDS,
          by: `payout ${payout.status}`,
        });
      }
      metrics.payoutTransitions.inc({ status: payout.status });
      if (payout.status === 'COMPLETED' && payout.paidAt && payout.confirmedAt) {
        const seconds = (Date.parse(payout.confirmedAt) - Date.parse(payout.paidAt)) / 1000;
        if (Number.isFinite(seconds) && seconds >= 0) metrics.paidToCompleted.observe(seconds);
      }
      logger.info({ payoutId: payout.id, status: payout.status, version: payout.version }, 'payout recorded');
    },
    async findPayoutWorkflow(payoutId: string): Promise<PayoutLocation | null> {
      // The id column is a uuid: anything else is not ours, and would make the query itself fail.
      if (!isUuid(payoutId)) return null;
      return findPayoutLocation(db, payoutId);
    },
    async alertSettlementOverdue(a: {
      payoutId: string;
      partnerId: string;
      mode: string;
      overdueSeconds: number;
    }): Promise<void> {
      logger.error(
        { event: 'settlement_overdue', ...a },
        'settlement not confirmed within the settlement timeout; still waiting, check the transfer',
      );
    },
    /**
     * The payout waits on an unknown (or is flagged for review): one open item per payout and kind,
     * logged at error level with the payout's id once, when it opens.
     */
    async raiseAttention(a: { payoutId: string; kind: AttentionKind; detail: string }): Promise<void> {
      if (!(await raiseAttention(db, a))) return;
      metrics.attentionRaised.inc({ kind: a.kind });
      logger.error({ event: 'payout_attention', ...a }, 'payout needs attention: waiting without proof');
    },
    /** Proof arrived, or an operator decided: the payout's waiting items of these kinds are closed. */
    async clearAttention(a: { payoutId: string; kinds: AttentionKind[]; by: string }): Promise<void> {
      const cleared = await clearAttention(db, a);
      if (cleared > 0) logger.info({ event: 'payout_attention_cleared', ...a }, 'payout attention cleared');
    },
    /** The decision a payout's workflow accepted from an operator: who, what and why, kept for the record. */
    async recordOperatorDecision(d: OperatorDecision): Promise<void> {
      await recordOperatorDecision(db, d);
      logger.warn({ event: 'operator_decision', ...d }, 'operator decided a payout');
    },
    /**
     * The provider reports USDT sent for a payout that already ended (FAILED, or COMPLETED by another
     * transaction; the workflow passes on no other report): a lost provider answer, a forgotten
     * transaction or an operator's `fail` while the provider settled. USDT may have reached the
     * receiver while the service thinks otherwise (docs/decisions.md D85). Recorded once per payout
     * and transaction, with the payout's `settled_after_end` review item, which holds its refund
     * cases; counted (SettlementReportedAfterEnd) and logged as an error that once. Retries and
     * redeliveries find the record and add nothing. A failed settlement after the end needs nothing.
     */
    async alertLateSettlement(a: { payoutId: string; status: string; event: ProviderEvent }): Promise<void> {
      if (a.event.type !== 'settlement.completed') return;
      const { event } = a;
      const txHash = event.txHash.toLowerCase();
      const fields = {
        event: 'settlement_after_payout_ended',
        payoutId: a.payoutId,
        status: a.status,
        eventId: event.eventId,
        txHash,
        amountUsdt: event.amountUsdt,
        chainId: event.chainId,
      };
      // Histories of older code compared with a payout location that had no transaction: the report
      // of the very transfer that completed the payout may still reach here, and is no news.
      const payout = await findPayoutLocation(db, a.payoutId);
      if (payout?.status === 'COMPLETED' && payout.blockchainTxId?.toLowerCase() === txHash) {
        logger.info(fields, 'settlement report of the transfer that completed the payout: nothing to do');
        return;
      }
      const { recorded, attentionOpened } = await recordSettlementAfterEnd(db, {
        payoutId: a.payoutId,
        txHash,
        amountUsdt: event.amountUsdt,
        chainId: event.chainId,
        payoutStatus: a.status,
        eventId: event.eventId,
      });
      if (!recorded) {
        logger.warn(fields, 'settlement report after the payout ended: already recorded');
        return;
      }
      // A bounded label: the payout statuses (anything else, which no workflow passes, is `unknown`).
      const status = (PAYOUT_STATUSES as readonly string[]).includes(a.status) ? a.status : 'unknown';
      metrics.settlementsAfterEnd.inc({ status });
      if (attentionOpened) metrics.attentionRaised.inc({ kind: 'settled_after_end' });
      logger.error(
        fields,
        'provider reports USDT sent for a payout that has ended: its refund cases are held; check the transaction on chain',
      );
    },
    async alertSettlementBelowMinimum(a: {
      payoutId: string;
      partnerId: string;
      minAmountUsdtUnits: string;
      settledAmountUsdtUnits: string;
    }): Promise<void> {
      metrics.settlementBelowMinimum.inc();
      logger.error(
        { event: 'settlement_below_minimum', ...a },
        'settled USDT is below the guaranteed minimum',
      );
    },
    /**
     * Opens a refund case for a received PIX payment that will not be settled (the activity keeps its
     * first name, which running workflow histories refer to). Raises PayoutRefundDue through the
     * metric. A redelivered event of the payment a payout settles opens nothing. The case's id is
     * returned (for a case opened now or before): the workflow starts the case's refund workflow.
     */
    async recordLatePayment(req: {
      payoutId: string;
      event: ProviderEvent;
      reason: string;
      kind?: RefundKind;
    }): Promise<OpenRefundCaseResult | { outcome: 'not_a_payment' }> {
      if (req.event.type !== 'pix.received') return { outcome: 'not_a_payment' };
      const kind = req.kind ?? 'late_payment';
      const result = await openRefundCase(db, {
        eventId: req.event.eventId,
        payoutId: req.payoutId,
        chargeId: req.event.chargeId,
        amountBrl: req.event.amountBrl,
        reason: req.reason,
        kind,
      });
      if (result.outcome === 'opened') {
        metrics.refundCasesOpened.inc({ kind });
        logger.error(
          {
            event: 'refund_case_opened',
            kind,
            payoutId: req.payoutId,
            caseId: result.caseId,
            eventId: req.event.eventId,
            amountBrl: req.event.amountBrl,
            reason: req.reason,
          },
          'PIX payment received that will not be settled: refund case opened',
        );
      } else if (result.outcome === 'payment_settles_its_payout') {
        logger.info(
          { payoutId: req.payoutId, eventId: req.event.eventId },
          'redelivered event of the payment this payout settles: nothing to refund',
        );
      }
      return result;
    },
  };
}

export type PayoutBookkeepingActivities = ReturnType<typeof createPayoutBookkeepingActivities>;
