import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { PayoutRequestError, type PayoutRequestErrorCode } from '../domain/payout-request-errors';

/** An error whose status and message are meant for the client, as `{"error": message}`. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** What the partner is told for each refusal of the create-payout service: status and exact message. */
const PAYOUT_REQUEST_ERRORS: Record<PayoutRequestErrorCode, [number, string, Record<string, string>?]> = {
  quote_unavailable: [503, 'quote unavailable, retry later'],
  idempotency_conflict: [409, 'idempotency conflict'],
  amount_too_small: [400, 'amount_brl is too small: min_amount_usdt must be at least 0.01'],
  charge_refused: [502, 'payment provider could not create the PIX charge, retry later'],
  charge_timeout: [503, 'payment provider unavailable, retry later'],
  receiver_blocked_by_issuer: [422, 'receiver_wallet cannot receive USDT: blocked by the token issuer'],
  receiver_failed_screening: [422, 'receiver_wallet failed compliance screening'],
  screening_unavailable: [503, 'compliance screening unavailable, retry later', { 'retry-after': '5' }],
};

const FRAMEWORK_ERRORS: Record<string, [number, string]> = {
  FST_ERR_CTP_INVALID_JSON_BODY: [400, 'invalid JSON body'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'invalid JSON body'],
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'request body too large (limit 16 KiB)'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'content-type must be application/json'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'invalid content-length'],
  FST_ERR_BAD_URL: [400, 'invalid URL'],
  // Only reachable past maxParamLength (see app.ts): no id that long exists.
  FST_ERR_MAX_PARAM_LENGTH: [404, 'not found'],
};

/**
 * The one place that shapes error bodies: every error leaves as exactly `{"error": string}`, and
 * nothing unexpected (stack, driver message) ever reaches a client.
 */
export function installErrorHandling(
  app: FastifyInstance,
  declaredMethods: (path: string) => string[] = () => [],
): void {
  /** 405 with Allow when the path is a route's under another method; false for an unknown path. */
  const refuseUndeclaredMethod = (request: FastifyRequest, reply: FastifyReply): boolean => {
    const allowed = declaredMethods(request.url.split('?')[0] ?? '');
    if (allowed.length === 0) return false;
    void reply.code(405).header('allow', allowed.join(', ')).send({ error: 'method not allowed' });
    return true;
  };

  app.setErrorHandler((error: FastifyError, request, reply) => {
    // A request matching no route can still fail before the not-found handler runs (Fastify wants a
    // content-type on a QUERY, say): the method is what is wrong with it, not its headers.
    if (request.is404 && refuseUndeclaredMethod(request, reply)) return reply;
    if (error instanceof HttpError) {
      return reply.code(error.statusCode).headers(error.headers).send({ error: error.message });
    }
    if (error instanceof PayoutRequestError) {
      const [status, message, headers = {}] = PAYOUT_REQUEST_ERRORS[error.code];
      // A 5xx here is an outside party's trouble, not the partner's: worth a line for the operator.
      if (status >= 500) request.log.warn({ err: error }, 'payout request refused');
      return reply.code(status).headers(headers).send({ error: message });
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      const first = error.validation[0];
      return reply.code(400).send({ error: first?.message ?? 'invalid request' });
    }
    if (error instanceof SyntaxError) return reply.code(400).send({ error: 'invalid JSON body' });
    const known = error.code ? FRAMEWORK_ERRORS[error.code] : undefined;
    if (known) return reply.code(known[0]).send({ error: known[1] });
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      return reply.code(error.statusCode).send({ error: 'invalid request' });
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(500).send({ error: 'internal error' });
  });
  app.setNotFoundHandler((request, reply) => {
    if (refuseUndeclaredMethod(request, reply)) return reply;
    return reply.code(404).send({ error: 'not found' });
  });
}

/**
 * Fastify's `frameworkErrors` option: errors raised while routing (an undecodable percent-escape in
 * the path), which otherwise get Fastify's own `{"error","code","message","statusCode"}` body.
 */
export function frameworkErrorHandler(
  error: FastifyError,
  _request: FastifyRequest,
  reply: FastifyReply,
): void {
  const [status, message] = FRAMEWORK_ERRORS[error.code] ?? [400, 'invalid request'];
  void reply.code(status).send({ error: message });
}

/**
 * Fastify's `clientErrorHandler` option: requests Node's HTTP parser refuses (bad header bytes,
 * headers over the size limit) never reach a route, and Fastify's default answer for them has extra
 * keys. This writes the same `{"error": string}` shape by hand and closes the connection, as Node does.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'request headers too large']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request timeout']
        : [400, 'malformed HTTP request'];
  if (!socket.writable) return void socket.destroy();
  const body = JSON.stringify({ error: message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}
