import type { Db } from '../adapters/db/pool';
import { takeRateLimitToken } from '../adapters/db/rate-limit-repo';
import { API_ERRORS, type HttpError } from './errors';

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
  return API_ERRORS.rateLimited();
}
