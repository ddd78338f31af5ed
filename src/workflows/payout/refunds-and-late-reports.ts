import { condition, log, proxyActivities } from '@temporalio/workflow';
import type { PayoutBookkeepingActivities, RefundKind } from '../../activities';
import type { PayoutRecord, PayoutStatus } from '../../domain/payout';
import type { ProviderEvent } from '../../domain/provider-event';
import { BOOKKEEPING } from '../activity-options';
import type { PaymentInbox } from './payment-inbox';
import { startRefundWorkflow } from '../refund.workflow';

const bookkeeping =
  proxyActivities<Pick<PayoutBookkeepingActivities, 'recordLatePayment' | 'alertLateSettlement'>>(
    BOOKKEEPING,
  );

/** What became of a provider event that reached a payout after it had ended. */
export type AfterTheEnd = 'late_payment' | 'duplicate_payment' | 'late_settlement' | 'ignored';

/**
 * Opens the refund case of a payment that will not be settled and starts the case's refund workflow
 * (docs/decisions.md D62), which returns the payment or waits for an operator. A case opened before
 * (the same payment reached another path) gets its workflow started once all the same.
 */
export async function openRefund(req: {
  payoutId: string;
  event: ProviderEvent;
  reason: string;
  kind?: RefundKind;
}): Promise<'opened' | 'payment_settles_its_payout'> {
  const opened = await bookkeeping.recordLatePayment(req);
  if (opened.outcome !== 'opened' && opened.outcome !== 'already_open') return 'payment_settles_its_payout';
  await startRefundWorkflow(opened.caseId);
  return 'opened';
}

/**
 * The one rule for a provider event that arrives once its payout has ended, whether the payout's own
 * run takes it (it was still closing) or the provider-event workflow does (the run had closed): a
 * payment opens a refund case (the redelivered event of the payment it settled opens nothing); a
 * completed settlement is alerted, USDT sent for a payout that no longer expects it, unless it is the
 * report of the very transfer that completed the payout.
 */
export async function actOnEventAfterTheEnd(
  payout: { id: string; status: PayoutStatus; blockchainTxId?: string },
  event: ProviderEvent,
): Promise<AfterTheEnd> {
  if (event.type === 'pix.received') {
    const refund = await openRefund({
      payoutId: payout.id,
      event,
      reason: paymentAfterTheEnd(payout.status),
      // A payout whose run closed while its row is neither COMPLETED nor FAILED (terminated, failed on
      // a bug) may still be settled by this very payment: a person decides, never the policy.
      ...(payout.status !== 'COMPLETED' &&
        payout.status !== 'FAILED' && { kind: 'payout_unresolved' as const }),
    });
    return refund === 'payment_settles_its_payout' ? 'duplicate_payment' : 'late_payment';
  }
  if (event.type === 'settlement.completed') {
    if (payout.blockchainTxId !== undefined && event.txHash === payout.blockchainTxId) return 'ignored';
    await bookkeeping.alertLateSettlement({ payoutId: payout.id, status: payout.status, event });
    return 'late_settlement';
  }
  log.info('provider event for an ended payout needs nothing', { eventId: event.eventId, type: event.type });
  return 'ignored';
}

/** The refund case's reason for a payment that came after its payout ended. */
export function paymentAfterTheEnd(status: PayoutStatus): string {
  return `payment received after the payout was ${status}`;
}

/**
 * Opens the refund cases the inbox finds due (a wrong amount, a second payment, a payment after the
 * expiry or the end) and alerts settlement reports that came after the payout ended: while the payout
 * runs, then once more when it has ended, until nothing is left.
 */
export class RefundsAndLateReports {
  private ended = false;
  /** A refund case is being opened (its activities or child start in flight). */
  private opening = false;
  private whileRunning: Promise<void> = Promise.resolve();

  constructor(
    private readonly payout: () => PayoutRecord,
    private readonly inbox: PaymentInbox,
  ) {}

  /** No refund case due or being opened: the payout may hand over to a new run. */
  get idle(): boolean {
    return !this.opening && this.inbox.quiet;
  }

  /** Starts opening refund cases as they become due; runs until `finish`. */
  start(): void {
    this.whileRunning = this.openWhileRunning();
  }

  /**
   * After COMPLETED or FAILED: the refund cases still due and the alerts for settlements reported
   * too late. Events may keep arriving while these activities run; the loop takes them too.
   */
  async finish(): Promise<void> {
    this.ended = true;
    await this.whileRunning;
    const { inbox } = this;
    while (inbox.refundsDue.length > 0 || inbox.lateSettlements.length > 0) {
      await this.openDueRefunds();
      for (
        let event = inbox.lateSettlements.shift();
        event !== undefined;
        event = inbox.lateSettlements.shift()
      ) {
        await actOnEventAfterTheEnd(this.payout(), event);
      }
    }
  }

  private async openWhileRunning(): Promise<void> {
    for (;;) {
      await condition(() => this.inbox.refundsDue.length > 0 || this.ended);
      if (this.inbox.refundsDue.length === 0) return;
      await this.openDueRefunds();
    }
  }

  private async openDueRefunds(): Promise<void> {
    const due = this.inbox.refundsDue;
    this.opening = true;
    try {
      for (let next = due.shift(); next !== undefined; next = due.shift()) {
        const { event, kind, reason } = next;
        await openRefund({ payoutId: this.payout().id, event, reason, kind });
      }
    } finally {
      this.opening = false;
    }
  }
}
