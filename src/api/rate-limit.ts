/**
 * The rate-limit buckets of partner requests (docs/decisions.md D15), spent by the API-key check
 * (auth.ts): creates and cancels (POST_RATE_LIMIT_PER_MINUTE) and every read
 * (READ_RATE_LIMIT_PER_MINUTE), each per API key; and the callback-management routes
 * (/v1/callback*, CALLBACK_RATE_LIMIT_PER_MINUTE), per partner, apart from both (D68): a test event
 * makes the api connect out, so those routes are limited on their own and never spend the payout
 * quota. Every authenticated request spends a token, whatever its outcome (a 400 too): the limit is
 * on what a partner asks, not on what succeeds.
 */
export const CREATE_BUCKET = 'post-payouts';
export const READ_BUCKET = 'get-payout';
export const CALLBACK_BUCKET = 'callback';
