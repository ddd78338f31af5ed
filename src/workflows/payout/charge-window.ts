import { ApplicationFailure, condition, log, proxyActivities, setHandler } from '@temporalio/workflow';
import type { ProviderActivities } from '../../activities';
import { isTerminal, type FailureReason, type PayoutRecord } from '../../domain/payout';
import { isActivityError, isRefusal } from '../activity-errors';
import { CHARGE_CANCEL, CHARGE_RECONCILIATION } from '../activity-options';
import { cancelPayoutUpdate, PAYOUT_NOT_CANCELLABLE, type PayoutSettings } from '../payout.contract';
import type { Attention } from './attention';
import type { OperatorDesk } from './operator-desk';
import type { Decided } from './operator-desk';
import type { PaymentInbox } from './payment-inbox';
import { ATTENTION_AFTER_MS } from './settlement-steps';

const reconciling =
  proxyActivities<Pick<ProviderActivities, 'fetchChargeStatus' | 'cancelPixCharge'>>(CHARGE_RECONCILIATION);
const cancelling =
  proxyActivities<Pick<ProviderActivities, 'fetchChargeStatus' | 'cancelPixCharge'>>(CHARGE_CANCEL);

/** How the wait for the payment ended. */
export type WindowOutcome = 'paid' | 'ended' | 'unpaid' | Decided;

/**
 * The time the PIX charge can be paid, and the one decision per payout between its payment, its
 * expiry and the partner's cancel: a payment received by the provider's expiry is settled, a cancel
 * wins only if the provider removed the charge before any payment reached it.
 */
export class ChargeWindow {
  /** When the charge stops being payable, on workflow time (from the provider's expires_at). */
  private expiryWaitMs: number;
  /** A cancel is being decided with the provider: the expiry waits for it. */
  private cancelling = false;
  /** The wait for the payment is over (paid, or expired and being reconciled): no cancel can win any more. */
  private expiryReached = false;

  constructor(
    private readonly payout: () => PayoutRecord,
    private readonly settings: PayoutSettings,
    private readonly inbox: PaymentInbox,
    private readonly attention: Attention,
    private readonly desk: OperatorDesk,
    private readonly fail: (reason: FailureReason) => Promise<void>,
  ) {
    this.expiryWaitMs = settings.chargeExpirySeconds * 1000;
  }

  /** Takes the partner's cancels from now on. */
  open(): void {
    setHandler(cancelPayoutUpdate, () => this.cancel(), {
      validator: () => this.refuseCancelUnlessPending(),
    });
  }

  /**
   * The expiry as the provider counts it: its `expires_at`, on workflow time. A value that disagrees
   * with what was asked for by more than the asked expiry itself (clock skew, a provider that ignores
   * the setting) is logged and the asked expiry is kept; reconciliation reads the provider's own
   * expiry and payment times either way.
   */
  followProviderExpiry(expiresAt: string | undefined): void {
    const untilExpiry = Date.parse(expiresAt ?? '') - Date.now();
    const asked = this.settings.chargeExpirySeconds * 1000;
    if (Number.isFinite(untilExpiry) && untilExpiry > 0 && untilExpiry <= 2 * asked) {
      this.expiryWaitMs = untilExpiry;
    } else {
      log.warn('provider expiry disagrees with the one asked for; keeping the asked one', {
        payoutId: this.payout().id,
        expiresAt,
      });
    }
  }

  /**
   * The expiry of a charge the api created before the workflow started (docs/decisions.md D81). Its
   * first task may run after the provider's expiry (no worker for that long): a passed expiry then ends
   * the wait at once, straight to the charge's removal and the reading of its status, which settles a
   * payment made by the expiry and refunds any later one. Otherwise as followProviderExpiry.
   */
  followExpiryOfChargeMadeBeforeStart(expiresAt: string): void {
    const untilExpiry = Date.parse(expiresAt) - Date.now();
    // Past on our clock too (the asked lifetime has gone by since POST): not a provider whose clock
    // runs behind ours, which keeps the asked expiry as followProviderExpiry does.
    const livedItsLife =
      Date.now() >= Date.parse(this.payout().createdAt) + this.settings.chargeExpirySeconds * 1000;
    // 1 ms rather than 0: a zero timeout is a no-timeout wait for workflows of older SDK versions.
    if (Number.isFinite(untilExpiry) && untilExpiry <= 0 && livedItsLife) this.expiryWaitMs = 1;
    else this.followProviderExpiry(expiresAt);
  }

  /**
   * Waits for the charge's payment until it expires, then removes the charge and reads its status:
   * `paid` (the inbox holds the payment), `ended` (cancelled meanwhile), `unpaid`, or an operator's
   * decision while the status could not be read.
   */
  async awaitPayment(): Promise<WindowOutcome> {
    const { inbox } = this;
    // The state, not the condition's result, decides: a payment applied in the same activation as
    // the expiry timer fired was received in time and must be settled, not dropped.
    await condition(() => inbox.payment !== undefined || isTerminal(this.payout().status), this.expiryWaitMs);
    // A cancel under way is decided before the expiry is: it may fail the payout or find its payment.
    this.expiryReached = true;
    await condition(() => !this.cancelling);
    if (isTerminal(this.payout().status)) return 'ended';
    if (inbox.payment === undefined) {
      const decided = await this.desk.untilDecided('fail', () => this.reconcileAtExpiry());
      if (decided !== undefined) return decided;
    }
    return inbox.payment === undefined ? 'unpaid' : 'paid';
  }

  /**
   * Webhooks are at least once but can be lost, and a bank knows nothing of an expiry: at expiry the
   * charge is removed at the provider (a later payer is refused by the bank), then its status is read.
   * A payment made by the expiry (both times on the provider's clock) is settled as if notified in
   * time; any later one is refunded. A status that cannot be read is never taken as unpaid: the
   * read is retried until it answers, with an attention item raised meanwhile.
   */
  private async reconcileAtExpiry(): Promise<void> {
    const { id: payoutId, providerChargeId: chargeId } = this.payout();
    await this.inbox.whileHeld(async () => {
      try {
        await this.attention.whileUnanswered(
          'charge_removal_unanswered',
          `charge ${chargeId} could not be removed at expiry`,
          ATTENTION_AFTER_MS,
          () => reconciling.cancelPixCharge({ payoutId, chargeId: chargeId! }),
        );
      } catch (err) {
        if (!isActivityError(err) || !isRefusal(err)) throw err;
        // Removal is a courtesy to late payers; its refusal says nothing about payment.
        log.warn('charge removal at expiry refused; reading its status', { payoutId });
      }
      const status = await this.attention.whileUnanswered(
        'charge_status_unreadable',
        `status of charge ${chargeId} unreadable at expiry: the payout stays PENDING until it is read`,
        ATTENTION_AFTER_MS,
        () => reconciling.fetchChargeStatus({ payoutId, chargeId: chargeId! }),
      );
      this.inbox.closeAt(status.expiresAt);
      this.inbox.takeReported(status.payments);
    });
    if (this.inbox.payment !== undefined) {
      log.info('payment found by reconciliation at expiry', {
        payoutId,
        eventId: this.inbox.payment.eventId,
      });
    }
  }

  /**
   * The partner's cancel, decided once against the payment. Payments are held while the provider
   * removes the charge: `removed` means none of its amount reached it first, so the payout fails
   * `cancelled` and any payment still in flight is refunded; `already_paid` means the payment wins, it
   * is fetched from the charge's status (its webhook may be late or lost) and the cancel is refused.
   */
  private async cancel(): Promise<PayoutRecord> {
    // A second cancel while one is being decided waits for that decision, then is judged on it.
    await condition(() => !this.cancelling);
    this.refuseCancelUnlessPending();
    // The charge exists before POST answers, so a cancel from the partner finds it; wait in case.
    await condition(() => this.payout().providerChargeId !== undefined || isTerminal(this.payout().status));
    this.refuseCancelUnlessPending();
    this.cancelling = true;
    try {
      const { id: payoutId, providerChargeId: chargeId } = this.payout();
      const removed = await this.inbox.whileHeld(async () => {
        // A provider that does not answer in time fails the update (the partner gets 503 and may try
        // again); the payout goes on as if no cancel had come.
        const outcome = await cancelling.cancelPixCharge({ payoutId, chargeId: chargeId! });
        if (outcome.kind === 'removed') {
          await this.fail('cancelled');
          return true;
        }
        const status = await cancelling.fetchChargeStatus({ payoutId, chargeId: chargeId! });
        this.inbox.takeReported(status.payments);
        return false;
      });
      if (removed) return this.payout();
      throw notCancellable('payout is already being processed');
    } finally {
      this.cancelling = false;
    }
  }

  /** Throws the partner's 409 unless a cancel can still win: PENDING and no payment applied. */
  private refuseCancelUnlessPending(): void {
    const { status } = this.payout();
    if (isTerminal(status)) throw notCancellable(`payout is already ${status}`);
    // Past the expiry (and no cancel under way) reconciliation decides: paid in time, or expired.
    const expiring = this.expiryReached && !this.cancelling;
    if (status !== 'PENDING' || this.inbox.payment !== undefined || expiring) {
      throw notCancellable('payout is already being processed');
    }
  }
}

function notCancellable(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: PAYOUT_NOT_CANCELLABLE, message, nonRetryable: true });
}
