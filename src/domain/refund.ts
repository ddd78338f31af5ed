/** Why a received payment is refunded rather than settled (the refund metric's `kind` label). */
export const REFUND_KINDS = [
  'late_payment',
  'wrong_amount',
  'wrong_charge',
  'second_payment',
  'payout_failed',
  // A payment for a payout whose workflow ended without its row ending (terminated, failed on a bug):
  // the payment may be the one that settles it, so only a person can tell whether it is refundable.
  'payout_unresolved',
] as const;
export type RefundKind = (typeof REFUND_KINDS)[number];

/**
 * The refund kinds returned to the payer without an operator by default (REFUND_AUTO_RETURN_KINDS,
 * docs/decisions.md D63): a payment the payer got wrong (amount, a second time, after the expiry or the
 * end: all `late_payment`). A payment on another charge and a paid payout that failed wait for
 * `admin refunds approve`: something else went wrong, and a person looks first.
 */
/**
 * Kinds never returned without an operator, whatever the setting says: the payment may still settle
 * its payout (an operator's `fail` in provider mode leaves the provider's settlement an unknown; a run
 * that ended without its payout ending leaves everything one), and returning it would pay twice.
 */
export const NEVER_AUTO_RETURN_KINDS: readonly RefundKind[] = ['payout_failed', 'payout_unresolved'];

export const DEFAULT_AUTO_RETURN_KINDS: readonly RefundKind[] = [
  'wrong_amount',
  'second_payment',
  'late_payment',
];
