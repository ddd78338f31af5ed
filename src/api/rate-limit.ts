import type { FastifyRequest } from 'fastify';
import type { Db } from '../adapters/db/pool';
import { partnerOf } from './auth';
import { spendRateLimitToken } from './throttle';

/** The create bucket (POST /v1/payouts, 100 a minute) and the read bucket every partner read spends. */
export const CREATE_BUCKET = 'post-payouts';
export const READ_BUCKET = 'get-payout';

/**
 * Token bucket per API key and bucket name. Every authenticated request spends a token, whatever
 * its outcome (a 400 too): the limit is on what a partner asks, not on what succeeds.
 */
export function rateLimit(db: Db, bucket: string, perMinute: number) {
  return async (request: FastifyRequest): Promise<void> => {
    await spendRateLimitToken(db, `${bucket}:${partnerOf(request).keyId}`, perMinute);
  };
}
