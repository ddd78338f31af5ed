/**
 * Why a request for a new payout was refused after its body was found valid. The service that
 * creates payouts throws these and knows nothing of HTTP; the api's error handler is the one place
 * that turns each into a status code and the partner-facing message. Their own messages are for
 * logs.
 */

export type PayoutRequestErrorCode =
  | 'quote_unavailable'
  | 'quote_stale'
  | 'idempotency_conflict'
  | 'idempotency_claim_unconfirmed'
  | 'amount_too_small'
  | 'charge_refused'
  | 'charge_timeout'
  | ScreeningRefusal
  | 'screening_unavailable'
  | 'treasury_cannot_send';

/** The refusals screening gives at POST, kept with the Idempotency-Key so a replay gets the same answer. */
export const SCREENING_REFUSALS = ['receiver_blocked_by_issuer', 'receiver_failed_screening'] as const;
export type ScreeningRefusal = (typeof SCREENING_REFUSALS)[number];

export abstract class PayoutRequestError extends Error {
  abstract readonly code: PayoutRequestErrorCode;
}

/** No exchange rate: without one no minimum can be guaranteed, so no payout. */
export class QuoteUnavailableError extends PayoutRequestError {
  readonly code = 'quote_unavailable';
  override name = 'QuoteUnavailableError';
}

/** The rate's price feed has not been updated for longer than it may (D52): no rate, no payout. */
export class QuoteStaleError extends PayoutRequestError {
  readonly code = 'quote_stale';
  override name = 'QuoteStaleError';
}

/** Another request holds the same Idempotency-Key and has not recorded its payout yet. */
export class IdempotencyConflictError extends PayoutRequestError {
  readonly code = 'idempotency_conflict';
  override name = 'IdempotencyConflictError';
}

/**
 * This request's Idempotency-Key claim was taken over by another request (docs/decisions.md D73): the
 * key answers what its new holder decides. A conflict (409) unless the request reads the key again.
 */
export class IdempotencyClaimLostError extends IdempotencyConflictError {
  override name = 'IdempotencyClaimLostError';
}

/**
 * The request could not make sure its Idempotency-Key claim would last until the payout's start: the
 * database answered its lease renewals too slowly (docs/decisions.md D73). Nothing was started by it,
 * and its claim is handed on at once: the partner retries.
 */
export class IdempotencyClaimUnconfirmedError extends PayoutRequestError {
  readonly code = 'idempotency_claim_unconfirmed';
  override name = 'IdempotencyClaimUnconfirmedError';
}

/** The amount buys less than the minimum quote (0.01 USDT) at the current rate. */
export class AmountTooSmallError extends PayoutRequestError {
  readonly code = 'amount_too_small';
  override name = 'AmountTooSmallError';
}

/** The payment provider refused to create the PIX charge; the payout failed before anyone saw it. */
export class ChargeRefusedError extends PayoutRequestError {
  readonly code = 'charge_refused';
  override name = 'ChargeRefusedError';
}

/** The PIX charge was not created in time; the payout's workflow keeps trying. */
export class ChargeTimeoutError extends PayoutRequestError {
  readonly code = 'charge_timeout';
  override name = 'ChargeTimeoutError';
}

/**
 * Screening flagged the receiver (docs/decisions.md D45): the issuer's block is named to the partner,
 * a sanctions list or the operators' denylist never is.
 */
export class ReceiverRefusedError extends PayoutRequestError {
  override name = 'ReceiverRefusedError';
  constructor(
    readonly code: ScreeningRefusal,
    message: string,
  ) {
    super(message);
  }
}

/** A screening source could not be read: nothing is created, the partner retries (fail closed). */
export class ScreeningUnavailableRequestError extends PayoutRequestError {
  readonly code = 'screening_unavailable';
  override name = 'ScreeningUnavailableRequestError';
}

/** Treasury mode: the treasury cannot send now (blocked by the token's issuer); nothing is created. */
export class TreasuryCannotSendError extends PayoutRequestError {
  readonly code = 'treasury_cannot_send';
  override name = 'TreasuryCannotSendError';
}
