/**
 * How a payout or a refund waits for an answer that does not come (a treasury blocked by the token's
 * issuer, a provider's transfer that does not pay the receiver, a return the provider keeps
 * `returning`): for a day it looks as often as each step's own backoff allows, then once an hour.
 * Weeks of waiting then cost some hundreds of looks instead of tens of thousands, and a person who
 * fixes the cause sees the payout move within the hour (docs/decisions.md D87).
 */

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

/** After this long unanswered a wait is long: it looks once an hour. */
export const LONG_WAIT_AFTER_MS = 24 * HOUR_MS;
/** The pause between looks once a wait is long. */
export const LONG_WAIT_LOOK_MS = HOUR_MS;

/**
 * The longest pause between two looks at an answer missing for `waitedMs`: the step's own cap
 * (`firstDayCapMs`) during the first day, then an hour (or the step's cap, if longer).
 */
export function lookCapAfter(waitedMs: number, firstDayCapMs: number): number {
  return waitedMs < LONG_WAIT_AFTER_MS ? firstDayCapMs : Math.max(firstDayCapMs, LONG_WAIT_LOOK_MS);
}

/**
 * The treasury's rounds run back to back for this long (each retries within itself: most outages
 * are over in minutes); past it, the treasury looks once per pause, a single attempt each time.
 */
export const TREASURY_BURST_MS = 30 * MINUTE_MS;
/** The pause between the treasury's looks after its burst, for the rest of the first day. */
export const TREASURY_FIRST_DAY_LOOK_MS = 10 * MINUTE_MS;

/** The pause before the treasury's next look, unanswered for `waitedMs`; 0 while in its burst. */
export function treasuryPauseAfter(waitedMs: number): number {
  if (waitedMs < TREASURY_BURST_MS) return 0;
  return lookCapAfter(waitedMs, TREASURY_FIRST_DAY_LOOK_MS);
}
