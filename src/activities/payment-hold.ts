import { ApplicationFailure } from '@temporalio/activity';
import { ProviderError, type PixCollection } from '../adapters/provider/types';
import type { Logger } from '../observability/logger';
import { PAYMENT_RETURNED_IN_FULL } from './failure-types';

/** The payment a treasury transfer pays for: its charge and the event id of the payment that settles. */
export interface SettlingPayment {
  payoutId: string;
  chargeId: string;
  paymentEventId: string;
}

/**
 * Right before the treasury signs, the payment it pays for is read again at the PIX provider: a
 * payment the payer is getting back (a devolução the payer's bank obtained, say by MED, while the
 * payout waited for the treasury or an operator) must not be paid in USDT as well. Throws retryably:
 * `PaymentReturned` (a return under way, or done for part of it: the payout waits with an attention item)
 * or `ChargeStatusUnreadable` (nothing is signed on an unknown: a read that fails is not "still held").
 * A return done for the whole amount is final: `PaymentReturnedInFull`, not retried.
 */
export function createPaymentHoldCheck(deps: { collection: PixCollection; logger: Logger }) {
  return async function assertPaymentHeld(payment: SettlingPayment): Promise<void> {
    let status;
    try {
      status = await deps.collection.getChargeStatus(payment.chargeId);
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      deps.logger.warn(
        { payoutId: payment.payoutId, chargeId: payment.chargeId, code: err.code },
        'charge status unreadable right before the treasury transfer: nothing signed',
      );
      throw ApplicationFailure.retryable(err.message, 'ChargeStatusUnreadable');
    }
    const settling = status.payments.find((p) => p.eventId === payment.paymentEventId);
    if (settling === undefined) {
      // Not (yet) listed: a lagging read, most likely. An unknown, not a return: retried as unreadable.
      deps.logger.warn(
        { payoutId: payment.payoutId, paymentEventId: payment.paymentEventId },
        'the settling payment is not listed on its charge right before the treasury transfer: nothing signed',
      );
      throw ApplicationFailure.retryable(
        `payment ${payment.paymentEventId} is not listed on charge ${payment.chargeId} yet`,
        'ChargeStatusUnreadable',
      );
    }
    if (settling.returnedInFull === true) {
      // Done, for the whole amount: the payer has it all back. Final: the payout fails, with no refund.
      deps.logger.error(
        { event: 'payment_returned', payoutId: payment.payoutId, paymentEventId: payment.paymentEventId },
        'the payment was returned to the payer in full right before the treasury transfer: nothing signed',
      );
      throw ApplicationFailure.nonRetryable(
        `payment ${payment.paymentEventId} was returned to the payer in full: nothing is sent, nothing is refunded`,
        PAYMENT_RETURNED_IN_FULL,
      );
    }
    if (settling.returned === true) {
      const why = 'being returned to the payer';
      deps.logger.error(
        { event: 'payment_returned', payoutId: payment.payoutId, paymentEventId: payment.paymentEventId },
        `the payment is ${why} right before the treasury transfer: nothing signed`,
      );
      throw ApplicationFailure.retryable(
        `payment ${payment.paymentEventId} is ${why}: nothing is sent until an operator decides`,
        'PaymentReturned',
      );
    }
  };
}

export type PaymentHoldCheck = ReturnType<typeof createPaymentHoldCheck>;
