import type { Db } from '../adapters/db/pool';
import { takeRateLimitToken } from '../adapters/db/rate-limit-repo';
import { HttpError } from './errors';

const RETRY_AFTER_SECONDS = 60;

/**
 * Spends one token of a bucket shared by all replicas through PostgreSQL; an empty bucket answers
 * 429 with `Retry-After: 60`. Every throttle of the api goes through here, so they all answer alike.
 */
export async function spendRateLimitToken(db: Db, bucket: string, perMinute: number): Promise<void> {
  if (await takeRateLimitToken(db, bucket, perMinute)) return;
  throw rateLimitExceeded();
}

/** The 429 of an empty bucket, however the token was taken. */
export function rateLimitExceeded(): HttpError {
  return new HttpError(429, `rate limit exceeded, retry after ${RETRY_AFTER_SECONDS} seconds`, {
    'retry-after': String(RETRY_AFTER_SECONDS),
  });
}
