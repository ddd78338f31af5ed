/**
 * What a payout can wait on without proof, and what flags an ended one for review (docs/decisions.md
 * D33): one list for the workflow that raises them, the database that keeps them and the gauge.
 */
export const ATTENTION_KINDS = [
  /** Past the settlement deadline, no proof yet of the transfer landing or of none being sent. */
  'settlement_overdue',
  /** The provider has not accepted or refused the settlement request (outage, lagging replica). */
  'settlement_request_unanswered',
  /** The provider's settlement status cannot be read, or it no longer knows the settlement. */
  'settlement_status_unknown',
  /** Our treasury transfer is not confirmed minutes after it was sent (unmined, a nonce gap, a mismatch). */
  'transfer_unconfirmed',
  /** The treasury cannot send (blocked by the token's issuer): nothing is signed until it can. */
  'treasury_cannot_send',
  /** Our treasury transfer waits behind a nonce gap: nonces below it that no transaction fills. */
  'treasury_nonce_gap',
  /** A reported transfer that does not match the payout (another chain, wallet or amount). */
  'transfer_mismatch',
  /** The charge's status cannot be read (at expiry, or right before the treasury signs): nothing is assumed. */
  'charge_status_unreadable',
  /** The charge could not be removed at the provider at expiry. */
  'charge_removal_unanswered',
  /** The receiver was flagged by screening right before sending: nothing is sent until an operator decides. */
  'receiver_flagged',
  /** A screening source cannot be read right before sending: nothing is sent until it answers. */
  'screening_unreadable',
  /** The payment is being returned to the payer (a devolução at the institution): nothing is sent. */
  'payment_returned',
  /** For review, not waiting: the provider reported the settlement failed, the chain shows it paid. */
  'provider_contradiction',
  /** For review, not waiting: more USDT settled than the payment could buy at the quote. */
  'settled_above_quote',
  /**
   * For review, not waiting: the provider reported USDT sent for the payout after it ended FAILED, or
   * COMPLETED by another transaction; its refund cases are not returned while the report is on record.
   */
  'settled_after_end',
] as const;
export type AttentionKind = (typeof ATTENTION_KINDS)[number];

/** Kinds that flag an ended payout for review; every other kind is something a live payout waits on. */
export const REVIEW_KINDS: readonly AttentionKind[] = [
  'provider_contradiction',
  'settled_above_quote',
  'settled_after_end',
];
export const WAITING_KINDS: readonly AttentionKind[] = ATTENTION_KINDS.filter(
  (k) => !REVIEW_KINDS.includes(k),
);
