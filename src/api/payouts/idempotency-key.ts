import type { FastifyRequest } from 'fastify';
import { API_ERRORS } from '../errors';
import { idempotencyKeySchema } from './payout.schemas';

/** The Idempotency-Key header, if any; 400 when it is not 1-255 printable ASCII characters. */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const raw = request.headers['idempotency-key'];
  if (raw === undefined) return undefined;
  const key = idempotencyKeySchema.safeParse(Array.isArray(raw) ? raw[0] : raw);
  if (!key.success) throw API_ERRORS.invalidRequest(key.error.issues[0]!.message);
  return key.data;
}

/**
 * The Idempotency-Key header when it is valid, else undefined, never an error: for the API key's
 * lookup, which runs before the header is checked (a missing API key answers 401 before a malformed
 * Idempotency-Key answers 400).
 */
export function validIdempotencyKeyOf(request: FastifyRequest): string | undefined {
  const raw = request.headers['idempotency-key'];
  if (raw === undefined) return undefined;
  const key = idempotencyKeySchema.safeParse(Array.isArray(raw) ? raw[0] : raw);
  return key.success ? key.data : undefined;
}
