import type { FastifyRequest } from 'fastify';
import type { Db } from '../adapters/db/pool';
import { partnerOf } from './auth';
import { spendRateLimitToken } from './throttle';

/**
 * Token bucket per API key and bucket name. Every authenticated request spends a token, whatever
 * its outcome (a 400 too): the limit is on what a partner asks, not on what succeeds.
 */
export function rateLimit(db: Db, bucket: string, perMinute: number) {
  return async (request: FastifyRequest): Promise<void> => {
    await spendRateLimitToken(db, `${bucket}:${partnerOf(request).keyId}`, perMinute);
  };
}
