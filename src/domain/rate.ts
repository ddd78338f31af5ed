/**
 * Why no exchange rate can be given now (docs/decisions.md D52). Each is an unknown, never a guess:
 * no payout is created without a rate. `stale` is told to partners apart (the feed has not moved
 * for longer than it may, which takes longer to clear than a blip); `invalid` (a non-positive
 * answer, no or a future update time) and `unreadable` (no answer at all) are the plain
 * "quote unavailable".
 */
export type RateRefusal = 'stale' | 'invalid' | 'unreadable';

export class RateUnavailableError extends Error {
  override name = 'RateUnavailableError';
  constructor(
    readonly reason: RateRefusal,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
