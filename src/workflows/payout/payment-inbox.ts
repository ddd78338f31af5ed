import { log } from '@temporalio/workflow';
import type { RefundKind } from '../../activities';
import { sameExternalId } from '../../domain/ids';
import { formatCentavos, parseDecimal } from '../../domain/money';
import { isTerminal, type PayoutRecord } from '../../domain/payout';
import type { ProviderEvent } from '../../domain/provider-event';
import type { SettlementMode } from '../payout.contract';
import { paymentAfterTheEnd } from './refunds-and-late-reports';

export type Payment = Extract<ProviderEvent, { type: 'pix.received' }>;
export type SettlementEvent = Extract<ProviderEvent, { type: 'settlement.completed' | 'settlement.failed' }>;
/** What the inbox knows, handed from one run of the payout to the next (src/workflows/hand-over.ts). */
export interface InboxState {
  payment: Payment | undefined;
  settlementReports: SettlementEvent[];
  /** The event ids taken so far: each counts once, in whichever run it arrives. */
  seen: string[];
  paidBy: number | undefined;
}

export interface RefundDue {
  event: Payment;
  kind: RefundKind;
  reason: string;
}

/**
 * Where the provider's events for one payout land, and the rule for each payment: the one payout's
 * charge of exactly its amount settles it; every other payment (another amount or charge, a second
 * one, one after the payout ended or after its charge expired) is a refund due. Each event counts
 * once, by event id, whether it came by webhook or from the charge's status.
 *
 * Payments cannot always be judged when they arrive: before the charge id is known, or while a step
 * asks the provider something that decides them (a cancel, the reconciliation at expiry). They are
 * held meanwhile, and judged when the step is over (`whileHeld`), however it ends.
 */
export class PaymentInbox {
  /** The one payment this payout settles. */
  payment: Payment | undefined;
  /** Settlement reports not yet looked at by the settlement step, oldest first. */
  readonly settlementReports: SettlementEvent[] = [];
  /** Settlement reports for a payout that had ended: alerted once it has. */
  readonly lateSettlements: SettlementEvent[] = [];
  readonly refundsDue: RefundDue[] = [];
  private readonly seen = new Set<string>();
  private readonly held: Payment[] = [];
  private holds = 0;
  /** Provider time after which a payment is late: set once the charge has expired and been read. */
  private paidBy: number | undefined;

  constructor(
    private readonly payout: () => PayoutRecord,
    private readonly mode: SettlementMode,
    handedOver?: InboxState,
  ) {
    if (handedOver === undefined) return;
    this.payment = handedOver.payment;
    this.settlementReports.push(...handedOver.settlementReports);
    for (const id of handedOver.seen) this.seen.add(id);
    this.paidBy = handedOver.paidBy;
  }

  /** Nothing held or due: all the inbox knows is in its state, and can be handed over. */
  get quiet(): boolean {
    return (
      this.holds === 0 &&
      this.held.length === 0 &&
      this.refundsDue.length === 0 &&
      this.lateSettlements.length === 0
    );
  }

  /** The state for the next run; only when quiet. */
  handOver(): InboxState {
    if (!this.quiet) throw new Error('the inbox is handed over only when quiet');
    return {
      payment: this.payment,
      settlementReports: [...this.settlementReports],
      seen: [...this.seen],
      paidBy: this.paidBy,
    };
  }

  /** A provider event, by signal. Synchronous: judged in the activation it arrives in. */
  take(event: ProviderEvent): void {
    if (!this.firstTime(event.eventId)) return;
    if (!sameExternalId(event.externalId, this.payout().id)) {
      log.warn('provider event for another payout ignored', { eventId: event.eventId, type: event.type });
      return;
    }
    if (event.type === 'pix.received') return this.judge(event);
    this.takeSettlementReport(event);
  }

  /** Payments the charge's status reports, as if their webhooks had come (those that did count once). */
  takeReported(payments: Payment[]): void {
    for (const p of payments) if (this.firstTime(p.eventId)) this.judge(p);
  }

  /** From now on a payment made after `expiresAt` (the provider's clock) is late, whenever it is learned. */
  closeAt(expiresAt: string): void {
    const at = Date.parse(expiresAt);
    if (Number.isFinite(at)) this.paidBy = at;
  }

  /** Holds payments while `step` runs, then judges them, on every way the step can end. */
  async whileHeld<T>(step: () => Promise<T>): Promise<T> {
    this.holds++;
    try {
      return await step();
    } finally {
      this.holds--;
      this.releaseHeld();
    }
  }

  /** Judges the payments held so far (the charge id became known, or the payout ended). */
  releaseHeld(): void {
    if (this.holds > 0) return;
    for (const p of this.held.splice(0)) this.judge(p);
  }

  /**
   * Everything received and not settled once the payout has ended: the held payments included, and
   * settlement reports nobody read.
   */
  settleAccounts(reason: string): void {
    const { payout } = this;
    if (!isTerminal(payout().status)) throw new Error('settleAccounts before the payout ended');
    // Held or not, a payment judged after the end is refunded.
    for (const p of this.held.splice(0)) this.judge(p);
    // Reports the settlement step never looked at are late now: a completed one is alerted.
    this.lateSettlements.push(...this.settlementReports.splice(0));
    // A payment the payer got back in full before anything was sent (payment_returned) has nothing left to refund.
    if (
      payout().status === 'FAILED' &&
      this.payment !== undefined &&
      payout().failureReason !== 'payment_returned'
    ) {
      this.refund(this.payment, 'payout_failed', `payout failed (${reason}) after its payment was received`);
      this.payment = undefined;
    }
  }

  private firstTime(eventId: string): boolean {
    if (this.seen.has(eventId)) return false;
    this.seen.add(eventId);
    return true;
  }

  private takeSettlementReport(event: SettlementEvent): void {
    const payout = this.payout();
    if (isTerminal(payout.status)) {
      this.lateSettlements.push(event);
    } else if (this.mode !== 'provider') {
      log.warn('provider settlement event ignored in treasury mode', { eventId: event.eventId });
    } else if (payout.providerChargeId !== undefined && event.chargeId !== payout.providerChargeId) {
      log.warn('settlement event for another charge ignored', { eventId: event.eventId });
    } else {
      // Kept even while PENDING: deliveries are unordered; the settlement step reads them in PROCESSING.
      this.settlementReports.push(event);
    }
  }

  private judge(event: Payment): void {
    const payout = this.payout();
    if (isTerminal(payout.status)) {
      return this.refund(event, 'late_payment', paymentAfterTheEnd(payout.status));
    }
    if (this.holds > 0 || payout.providerChargeId === undefined) {
      this.held.push(event);
      return;
    }
    if (event.chargeId !== payout.providerChargeId) {
      return this.refund(
        event,
        'wrong_charge',
        `payment on charge ${event.chargeId}, not this payout's charge`,
      );
    }
    if (this.paidBy !== undefined && !(Date.parse(event.paidAt) <= this.paidBy)) {
      return this.refund(event, 'late_payment', 'payment made after the PIX charge expired');
    }
    if (!isAmountOf(payout, event.amountBrl)) {
      const expected = formatCentavos(BigInt(payout.amountCentavos));
      return this.refund(event, 'wrong_amount', `paid ${event.amountBrl} BRL on a charge of ${expected} BRL`);
    }
    if (this.payment !== undefined) {
      // A static BR Code can be paid twice; only the first payment is settled.
      return this.refund(event, 'second_payment', 'second payment for the same PIX charge');
    }
    this.payment = event;
  }

  private refund(event: Payment, kind: RefundKind, reason: string): void {
    log.warn('payment will not be settled: refund case', { eventId: event.eventId, kind });
    this.refundsDue.push({ event, kind, reason });
  }
}

function isAmountOf(payout: PayoutRecord, amountBrl: string): boolean {
  try {
    return parseDecimal(amountBrl, 2) === BigInt(payout.amountCentavos);
  } catch {
    return false;
  }
}
