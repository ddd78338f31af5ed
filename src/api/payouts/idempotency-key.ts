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
