/**
 * The failure types that end an activity's retries: the activity asked and was told no, so another
 * attempt cannot help. Activities throw them, the workflows' retry policies and refusal checks read
 * them, and recorded histories carry them (rename one and replay breaks). Imported by workflow code
 * too, so this file imports nothing.
 */

/** The payment provider refused: a 400, an answer about another payout, an event it does not know. */
export const PROVIDER_REJECTED = 'ProviderRejected';

/** The chain refused before anything was signed (a transfer that would revert, a misconfigured
 * chain, no treasury key), or a treasury nonce was taken by another transaction. */
export const CHAIN_REJECTED = 'ChainRejected';

/** The settling payment is back with the payer, all of it, before anything was signed: final, nothing to refund. */
export const PAYMENT_RETURNED_IN_FULL = 'PaymentReturnedInFull';
