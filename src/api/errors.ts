import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import type { PayoutStatus } from '../domain/payout';
import { PayoutRequestError, type PayoutRequestErrorCode } from '../domain/payout-request-errors';
import { CLAIM_LEASE_SECONDS } from './payouts/claim-lease';
import { STARTING_AFTER_UNKNOWN } from './payouts/list.schemas';
import { EVENTS_STARTING_AFTER_UNKNOWN } from './callbacks/callback.schemas';
import { URL_REFUSALS } from '../adapters/callbacks/url-guard';

/** An error whose status and message are meant for the client, as `{"error": message}`. Made by API_ERRORS. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const RETRY_AFTER_SECONDS = 60;
/** Screening sources answer again within seconds when a node or the database had a blip. */
const SCREENING_RETRY_AFTER_SECONDS = 5;
/** A rate source that did not answer (a provider or node blip) usually does within seconds. */
const QUOTE_RETRY_AFTER_SECONDS = 5;
/**
 * A request that could not confirm its Idempotency-Key claim in time ended its lease, or else the lease
 * runs out within this: the retry then takes the claim over instead of meeting 409.
 */
const BUSY_RETRY_AFTER_SECONDS = CLAIM_LEASE_SECONDS;
/** A callback host's DNS that did not answer in time usually does on the next try. */
const CALLBACK_DNS_RETRY_AFTER_SECONDS = 5;
/** A stale feed waits for its oracle network's next round: minutes, not seconds (D52). */
const STALE_FEED_RETRY_AFTER_SECONDS = 60;

/**
 * Every answer the api words for an error, in one table: its status and its exact message, as
 * docs/api.md gives them to partners. The only other messages are the request schemas' validation
 * messages (`*.schemas.ts`, beside the rules they word), which reach the partner through `invalidRequest`.
 */
export const API_ERRORS = {
  invalidRequest: (message: string) => new HttpError(400, message),
  invalidJsonBody: () => new HttpError(400, 'invalid JSON body'),
  repeatedJsonMember: (name: string) =>
    new HttpError(
      400,
      `invalid JSON body: member ${JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name)} appears more than once in one object`,
    ),
  bodyTooLarge: () => new HttpError(413, 'request body too large (limit 16 KiB)'),
  unsupportedMediaType: () => new HttpError(415, 'content-type must be application/json'),
  invalidContentLength: () => new HttpError(400, 'invalid content-length'),
  invalidUrl: () => new HttpError(400, 'invalid URL'),
  malformedRequest: () => new HttpError(400, 'malformed HTTP request'),
  headersTooLarge: () => new HttpError(431, 'request headers too large'),
  requestTimeout: () => new HttpError(408, 'request timeout'),
  notFound: () => new HttpError(404, 'not found'),
  methodNotAllowed: (allowed: string[]) =>
    new HttpError(405, 'method not allowed', { allow: allowed.join(', ') }),
  missingApiKey: () => new HttpError(401, 'missing X-API-Key header'),
  invalidApiKey: () => new HttpError(401, 'invalid API key'),
  rateLimited: () =>
    new HttpError(429, `rate limit exceeded, retry after ${RETRY_AFTER_SECONDS} seconds`, {
      'retry-after': String(RETRY_AFTER_SECONDS),
    }),
  payoutNotFound: () => new HttpError(404, 'payout not found'),
  payoutBeingProcessed: () => new HttpError(409, 'payout is already being processed'),
  payoutFinal: (status: PayoutStatus) => new HttpError(409, `payout is already ${status}`),
  chargeNoLongerPayable: (status: PayoutStatus) =>
    new HttpError(410, `payout is ${status}: its PIX charge can no longer be paid`),
  startingAfterUnknown: () => new HttpError(400, STARTING_AFTER_UNKNOWN),
  quoteUnavailable: () =>
    new HttpError(503, 'quote unavailable, retry later', {
      'retry-after': String(QUOTE_RETRY_AFTER_SECONDS),
    }),
  quoteStale: () =>
    new HttpError(503, 'quote unavailable: the price feed is stale, retry later', {
      'retry-after': String(STALE_FEED_RETRY_AFTER_SECONDS),
    }),
  idempotencyConflict: () => new HttpError(409, 'idempotency conflict'),
  serviceBusy: () =>
    new HttpError(503, 'service busy, retry later', { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) }),
  amountTooSmall: () => new HttpError(400, 'amount_brl is too small: min_amount_usdt must be at least 0.01'),
  chargeRefused: () => new HttpError(502, 'payment provider could not create the PIX charge, retry later'),
  providerUnavailable: () => new HttpError(503, 'payment provider unavailable, retry later'),
  unknownProvider: () => new HttpError(404, 'unknown provider'),
  receiverBlockedByIssuer: () =>
    new HttpError(422, 'receiver_wallet cannot receive USDT: blocked by the token issuer'),
  receiverFailedScreening: () => new HttpError(422, 'receiver_wallet failed compliance screening'),
  treasuryCannotSend: () =>
    new HttpError(503, 'payouts are paused: the treasury cannot send USDT, retry later', {
      'retry-after': String(RETRY_AFTER_SECONDS),
    }),
  screeningUnavailable: () =>
    new HttpError(503, 'compliance screening unavailable, retry later', {
      'retry-after': String(SCREENING_RETRY_AFTER_SECONDS),
    }),
  callbackUrlRefused: (reason: string) => new HttpError(400, `url refused: ${reason}`),
  callbackUrlUnresolvedNow: () =>
    new HttpError(503, URL_REFUSALS.unavailable, {
      'retry-after': String(CALLBACK_DNS_RETRY_AFTER_SECONDS),
    }),
  noCallbackConfigured: () =>
    new HttpError(409, 'no callback URL is set: set one with PUT /v1/callback first'),
  callbackOverlapActive: (until: string) =>
    new HttpError(
      409,
      `the previous secret rotation's overlap lasts until ${until}: rotate again after it ends, or with overlap_seconds 0 to end every replaced secret at once`,
    ),
  callbackEventsStartingAfterUnknown: () => new HttpError(400, EVENTS_STARTING_AFTER_UNKNOWN),
  /** A 4xx the framework raised that no entry above words. */
  otherClientError: (statusCode = 400) => new HttpError(statusCode, 'invalid request'),
  internalError: () => new HttpError(500, 'internal error'),
} as const;

/** Each refusal of the create-payout service. */
const PAYOUT_REQUEST_ERRORS: Record<PayoutRequestErrorCode, () => HttpError> = {
  quote_unavailable: API_ERRORS.quoteUnavailable,
  quote_stale: API_ERRORS.quoteStale,
  idempotency_conflict: API_ERRORS.idempotencyConflict,
  idempotency_claim_unconfirmed: API_ERRORS.serviceBusy,
  amount_too_small: API_ERRORS.amountTooSmall,
  charge_refused: API_ERRORS.chargeRefused,
  charge_timeout: API_ERRORS.providerUnavailable,
  receiver_blocked_by_issuer: API_ERRORS.receiverBlockedByIssuer,
  receiver_failed_screening: API_ERRORS.receiverFailedScreening,
  screening_unavailable: API_ERRORS.screeningUnavailable,
  treasury_cannot_send: API_ERRORS.treasuryCannotSend,
};

const FRAMEWORK_ERRORS: Record<string, () => HttpError> = {
  FST_ERR_CTP_INVALID_JSON_BODY: API_ERRORS.invalidJsonBody,
  FST_ERR_CTP_EMPTY_JSON_BODY: API_ERRORS.invalidJsonBody,
  FST_ERR_CTP_BODY_TOO_LARGE: API_ERRORS.bodyTooLarge,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: API_ERRORS.unsupportedMediaType,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: API_ERRORS.invalidContentLength,
  FST_ERR_BAD_URL: API_ERRORS.invalidUrl,
  // Only reachable past maxParamLength (see app.ts): no id that long exists.
  FST_ERR_MAX_PARAM_LENGTH: API_ERRORS.notFound,
};

function send(reply: FastifyReply, error: HttpError): FastifyReply {
  return reply.code(error.statusCode).headers(error.headers).send({ error: error.message });
}

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
    void send(reply, API_ERRORS.methodNotAllowed(allowed));
    return true;
  };

  app.setErrorHandler((error: FastifyError, request, reply) => {
    // A request matching no route can still fail before the not-found handler runs (Fastify wants a
    // content-type on a QUERY, say): the method is what is wrong with it, not its headers.
    if (request.is404 && refuseUndeclaredMethod(request, reply)) return reply;
    if (error instanceof HttpError) return send(reply, error);
    if (error instanceof PayoutRequestError) {
      const refusal = PAYOUT_REQUEST_ERRORS[error.code]();
      // A 5xx here is an outside party's trouble, not the partner's: worth a line for the operator.
      if (refusal.statusCode >= 500) request.log.warn({ err: error }, 'payout request refused');
      return send(reply, refusal);
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      return send(reply, API_ERRORS.invalidRequest(error.validation[0]?.message ?? 'invalid request'));
    }
    if (error instanceof SyntaxError) return send(reply, API_ERRORS.invalidJsonBody());
    const known = error.code ? FRAMEWORK_ERRORS[error.code] : undefined;
    if (known) return send(reply, known());
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      return send(reply, API_ERRORS.otherClientError(error.statusCode));
    }
    request.log.error({ err: error }, 'unhandled error');
    return send(reply, API_ERRORS.internalError());
  });
  app.setNotFoundHandler((request, reply) => {
    if (refuseUndeclaredMethod(request, reply)) return reply;
    return send(reply, API_ERRORS.notFound());
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
  void send(reply, (FRAMEWORK_ERRORS[error.code] ?? API_ERRORS.otherClientError)());
}

/**
 * Fastify's `clientErrorHandler` option: requests Node's HTTP parser refuses (bad header bytes,
 * headers over the size limit) never reach a route, and Fastify's default answer for them has extra
 * keys. This writes the same `{"error": string}` shape by hand and closes the connection, as Node does.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const { statusCode: status, message } =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? API_ERRORS.headersTooLarge()
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? API_ERRORS.requestTimeout()
        : API_ERRORS.malformedRequest();
  if (!socket.writable) return void socket.destroy();
  const body = JSON.stringify({ error: message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}
