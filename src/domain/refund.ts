/** Why a received payment is refunded rather than settled (the refund metric's `kind` label). */
export const REFUND_KINDS = [
  'late_payment',
  'wrong_amount',
  'wrong_charge',
  'second_payment',
  'payout_failed',
] as const;
export type RefundKind = (typeof REFUND_KINDS)[number];

/**
 * The refund kinds returned to the payer without an operator by default (REFUND_AUTO_RETURN_KINDS,
 * docs/decisions.md D63): a payment the payer got wrong (amount, a second time, after the expiry or the
 * end: all `late_payment`). A payment on another charge and a paid payout that failed wait for
 * `admin refunds approve`: something else went wrong, and a person looks first.
 */
export const DEFAULT_AUTO_RETURN_KINDS: readonly RefundKind[] = [
  'wrong_amount',
  'second_payment',
  'late_payment',
];
