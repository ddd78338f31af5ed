import type { FastifyRequest } from 'fastify';
import type { Db } from '../adapters/db/pool';
import { takeRateLimitToken } from '../adapters/db/rate-limit-repo';
import { partnerOf } from './auth';
import { HttpError } from './errors';

const RETRY_AFTER_SECONDS = 60;

/** The create bucket (POST /v1/payouts, 100 a minute) and the read bucket every partner read spends. */
export const CREATE_BUCKET = 'post-payouts';
export const READ_BUCKET = 'get-payout';

/**
 * Token bucket per API key and bucket name, shared by all replicas through PostgreSQL. Every
 * authenticated request spends a token, whatever its outcome (docs/decisions.md D15).
 */
export function rateLimit(db: Db, bucket: string, perMinute: number) {
  return async (request: FastifyRequest): Promise<void> => {
    const allowed = await takeRateLimitToken(db, `${bucket}:${partnerOf(request).keyId}`, perMinute);
    if (!allowed) {
      throw new HttpError(429, `rate limit exceeded, retry after ${RETRY_AFTER_SECONDS} seconds`, {
        'retry-after': String(RETRY_AFTER_SECONDS),
      });
    }
  };
}
