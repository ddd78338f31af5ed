import type { FastifyRequest } from 'fastify';
import type { Db } from '../adapters/db/pool';
import { takeRateLimitToken } from '../adapters/db/rate-limit-repo';
import { partnerOf } from './auth';
import { HttpError } from './errors';

const RETRY_AFTER_SECONDS = 60;

/**
 * Spends one token of a bucket shared by all replicas through PostgreSQL; an empty bucket answers
 * 429 with `Retry-After: 60`. Every throttle of the api goes through here, so they all answer alike.
 */
export async function spendRateLimitToken(db: Db, bucket: string, perMinute: number): Promise<void> {
  if (await takeRateLimitToken(db, bucket, perMinute)) return;
  throw new HttpError(429, `rate limit exceeded, retry after ${RETRY_AFTER_SECONDS} seconds`, {
    'retry-after': String(RETRY_AFTER_SECONDS),
  });
}

/**
 * Token bucket per API key and bucket name. Every authenticated request spends a token, whatever
 * its outcome (a 400 too): the limit is on what a partner asks, not on what succeeds.
 */
export function rateLimit(db: Db, bucket: string, perMinute: number) {
  return async (request: FastifyRequest): Promise<void> => {
    await spendRateLimitToken(db, `${bucket}:${partnerOf(request).keyId}`, perMinute);
  };
}
