/**
 * Rate-limit tokens this api replica took from a shared bucket ahead of need. Under a high limit a
 * replica takes a batch at once, so a partner's requests do not each write (and queue on) the same
 * bucket row; under an ordinary limit the batch is one token and every request asks PostgreSQL, as
 * before (docs/decisions.md D76).
 *
 * Tokens are only ever taken from the shared bucket, never made here: however many replicas hold
 * batches, a partner never gets more than its limit. What a replica holds is dropped after
 * HOLD_MS, so tokens it took and did not need go unused rather than being spent late.
 */
const HOLD_MS = 1_000;

/** A tenth of a second's refill, at least one: the most one replica takes from a bucket at once. */
export function batchSize(perMinute: number): number {
  return Math.max(1, Math.floor(perMinute / 600));
}

export class TokenLeases {
  private readonly held = new Map<string, { tokens: number; until: number }>();

  /** A monotonic clock: a wall clock stepped back must not keep tokens past their second. */
  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Spends one held token of `bucket`; false when this replica holds none (ask the bucket). */
  take(bucket: string): boolean {
    const lease = this.held.get(bucket);
    if (!lease) return false;
    if (lease.until <= this.now() || lease.tokens < 1) {
      this.held.delete(bucket);
      return false;
    }
    lease.tokens -= 1;
    return true;
  }

  /**
   * Keeps the tokens a batch brought beyond the one its request spent. Concurrent requests that each
   * fetched a batch add theirs up, so none of what they took is thrown away early; the whole holding
   * then lasts a second from the latest batch.
   */
  keep(bucket: string, tokens: number): void {
    if (tokens < 1) return;
    const now = this.now();
    const lease = this.held.get(bucket);
    const kept = lease && lease.until > now ? lease.tokens : 0;
    this.held.set(bucket, { tokens: kept + tokens, until: now + HOLD_MS });
    // Bounded: one entry per key and route bucket, swept at most once a second.
    if (this.held.size > 10_000 && now - this.swept > HOLD_MS) this.expire(now);
  }

  private swept = 0;

  private expire(now: number): void {
    this.swept = now;
    for (const [bucket, lease] of this.held) if (lease.until <= now) this.held.delete(bucket);
  }
}
