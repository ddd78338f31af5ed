import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { findPartnerByKeyHash, hashApiKey } from '../adapters/db/partners-repo';
import type { Db } from '../adapters/db/pool';
import { HttpError } from './errors';

export interface AuthenticatedPartner {
  id: string;
  /** Hex SHA-256 of the presented key: names its rate-limit buckets without holding the key. */
  keyId: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    partner?: AuthenticatedPartner;
  }
}

/**
 * X-Api-Key authentication (docs/api.md "Authentication"). Node lower-cases header names, so any
 * spelling of the header works. The stored SHA-256 is compared in constant time.
 */
export function authenticatePartner(db: Db) {
  return async (request: FastifyRequest): Promise<void> => {
    const raw = request.headers['x-api-key'];
    const key = Array.isArray(raw) ? raw[0] : raw;
    if (!key) throw new HttpError(401, 'missing X-API-Key header');
    const presented = hashApiKey(key);
    const found = await findPartnerByKeyHash(db, presented);
    if (!found || !timingSafeEqual(found.keyHash, presented)) throw new HttpError(401, 'invalid API key');
    request.partner = { id: found.partnerId, keyId: presented.toString('hex') };
  };
}

export function partnerOf(request: FastifyRequest): AuthenticatedPartner {
  if (!request.partner) throw new Error('route is missing the authentication hook');
  return request.partner;
}
