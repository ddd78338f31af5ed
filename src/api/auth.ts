import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { findPartnerRequest, type RecordedKey } from '../adapters/db/partner-request-repo';
import { hashApiKey } from '../adapters/db/partners-repo';
import type { StoredPayout } from '../adapters/db/payouts-repo';
import type { Db } from '../adapters/db/pool';
import { API_ERRORS, type HttpError } from './errors';
import { rateLimitExceeded, spendRateLimitToken } from './throttle';
import { batchSize, TokenLeases } from './token-leases';

export interface AuthenticatedPartner {
  id: string;
  /** Hex SHA-256 of the presented key: names its rate-limit buckets without holding the key. */
  keyId: string;
}

/**
 * What the key's lookup read besides the key, for the route (`reads` of `spending`): a property is
 * present only when it was read, `null` meaning "none".
 */
export interface PrefetchedReads {
  /** The payout the path names, of the key's partner (undefined: not read; null: none). */
  payout?: StoredPayout | null;
  /** The recorded answer of the request's Idempotency-Key (undefined: not read; null: none). */
  recordedKey?: RecordedKey | null;
}

/** What a route asks the key's lookup to read too: a payout id (a UUID, lower case), a key. */
export interface RouteReads {
  payoutId?: string;
  idempotencyKey?: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    partner?: AuthenticatedPartner;
    prefetched?: PrefetchedReads;
  }
}

export interface AuthOptions {
  /** Missing or invalid keys one client address may present per minute before it gets 429. */
  failuresPerMinute: number;
}

/**
 * X-Api-Key authentication. Node lower-cases header names, so any spelling of the header works. The
 * stored SHA-256 is compared in constant time.
 *
 * Failed attempts are throttled per client address: each 401 spends a token of the address's
 * bucket, and once it is empty a failing attempt answers 429 instead. A valid key is always
 * accepted, whatever the bucket of the address it comes from. Why:
 * - An address is not an identity. Partners call through shared egress (cloud NAT gateways,
 *   corporate proxies) that strangers use too; if failures locked the address, anyone could shut a
 *   partner out by sending bad keys from the same cloud region. A partner holding a valid key must
 *   never be locked out by someone else's failures.
 * - Letting a valid key through gives a guesser nothing: keys carry 256 random bits, so there is no
 *   key to find by guessing at any rate. What the bucket bounds is what failing costs us and tells
 *   the client: a client cycling through keys (a leaked list, a broken integration) is answered 429
 *   with Retry-After, shows up in the logs, and its failures no longer get the 401 a working
 *   integration would act on.
 */
/**
 * The X-Api-Key check of every partner route, with its rate limit: `spending(bucket, perMinute)` is
 * the route's onRequest hook. The key is looked up and a token of its bucket taken in one database
 * round trip (or, under a high limit, spent from a batch this replica holds: token-leases.ts); a
 * valid key past its limit answers 429 (docs/decisions.md D15, D76). A bucket is per key, or per
 * partner (all its keys together) when `per` says so (docs/decisions.md D68). `reads` names what the
 * route reads first (its payout, its Idempotency-Key's answer): read in the same round trip, for the
 * key's partner only, and left on `request.prefetched` (docs/decisions.md D78).
 */
export interface Authenticate {
  spending(
    bucket: string,
    perMinute: number,
    per?: 'key' | 'partner',
    reads?: (request: FastifyRequest) => RouteReads,
  ): (request: FastifyRequest) => Promise<void>;
}

export function authenticatePartner(db: Db, opts: AuthOptions): Authenticate {
  const leases = new TokenLeases();
  const refuse = async (request: FastifyRequest, refusal: HttpError): Promise<never> => {
    try {
      await spendRateLimitToken(db, `auth-failure:${request.ip}`, opts.failuresPerMinute);
    } catch (throttled) {
      request.log.warn({ clientAddress: request.ip }, 'API key failures throttled for this address');
      throw throttled;
    }
    throw refusal;
  };
  return {
    spending:
      (bucket, perMinute, per = 'key', reads) =>
      async (request) => {
        const raw = request.headers['x-api-key'];
        const key = Array.isArray(raw) ? raw[0] : raw;
        if (!key) return refuse(request, API_ERRORS.missingApiKey());
        const presented = hashApiKey(key);
        const keyId = presented.toString('hex');
        // Buckets are named per key (by its hash): the limit is on what each key asks; or per partner
        // (by its id, which the lookup appends): the limit is on what the partner asks, whatever key.
        const name = per === 'key' ? `${bucket}:${keyId}` : `${bucket}:partner:`;
        // The key is looked up on every request, so a revoked key or a suspended partner is refused
        // at once; a token this replica already holds (per-key buckets) spares the bucket a write.
        const also = reads?.(request) ?? {};
        const held = per === 'key' && leases.take(name);
        const found = await findPartnerRequest(db, presented, {
          ...also,
          ...(held
            ? {}
            : {
                bucket: {
                  name,
                  perMinute,
                  wanted: per === 'key' ? batchSize(perMinute) : 1,
                  perPartner: per === 'partner',
                },
              }),
        });
        const withinRateLimit = held || (found?.granted ?? 0) >= 1;
        if (found && !held && per === 'key') leases.keep(name, found.granted - 1);
        if (!found || !timingSafeEqual(found.keyHash, presented))
          return refuse(request, API_ERRORS.invalidApiKey());
        request.partner = { id: found.partnerId, keyId };
        if (!withinRateLimit) throw rateLimitExceeded();
        if (reads) {
          const prefetched: PrefetchedReads = {};
          if ('payout' in found) prefetched.payout = found.payout;
          if ('recordedKey' in found) prefetched.recordedKey = found.recordedKey;
          request.prefetched = prefetched;
        }
      },
  };
}

export function partnerOf(request: FastifyRequest): AuthenticatedPartner {
  if (!request.partner) throw new Error('route is missing the authentication hook');
  return request.partner;
}
