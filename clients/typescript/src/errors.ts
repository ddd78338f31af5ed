/**
 * Every answer of the api that is not a success, as an exception: `status` and the api's exact
 * `message` (`{"error": message}`; docs/api.md lists them per endpoint). Branch on the class or on
 * `status`, show or log `message`.
 */
export class PayoutsApiError extends Error {
  override name = 'PayoutsApiError';
  constructor(
    readonly status: number,
    message: string,
    /** The X-Request-Id of the answer: quote it to support. */
    readonly requestId: string | undefined,
    /** Seconds, when the api said when to retry (429, some 503s). */
    readonly retryAfterSeconds: number | undefined,
    /**
     * The Idempotency-Key the call sent (yours, or the one generated for it), on createPayout and
     * cancelPayout: retry with `{ idempotencyKey }` set to it, and a payout the call may have created
     * is answered instead of a second one (a 409 `idempotency conflict`: the key is still in flight).
     */
    readonly idempotencyKey?: string,
  ) {
    super(message);
  }
}

/**
 * An attempt got no whole answer within `timeoutMs` (and no retry was allowed or left). For a
 * createPayout or cancelPayout, `idempotencyKey` is the key it sent: retry with it.
 */
export class RequestTimeoutError extends Error {
  override name = 'RequestTimeoutError';
  constructor(
    readonly timeoutMs: number,
    readonly idempotencyKey?: string,
  ) {
    super(`no answer within ${timeoutMs} ms`);
  }
}

/**
 * A createPayout or cancelPayout that got no answer at all: the network failed on its last allowed
 * attempt, or the caller's signal aborted it (`cause` is that failure or the signal's reason). The
 * server may have acted on it: retry with `{ idempotencyKey }` set to this key, never with a new one.
 */
export class RequestFailedError extends Error {
  override name = 'RequestFailedError';
  constructor(
    readonly idempotencyKey: string,
    options: { cause: unknown },
  ) {
    super(
      `no answer to the request with Idempotency-Key ${idempotencyKey}: ${
        options.cause instanceof Error ? options.cause.message : String(options.cause)
      }`,
      options,
    );
  }
}

/** 400: the request is invalid; the message names the field. */
export class InvalidRequestError extends PayoutsApiError {
  override name = 'InvalidRequestError';
}
/** 401: the API key is missing or invalid. */
export class AuthenticationError extends PayoutsApiError {
  override name = 'AuthenticationError';
}
/** 404: unknown id, or another partner's. */
export class NotFoundError extends PayoutsApiError {
  override name = 'NotFoundError';
}
/**
 * 409: the resource's state forbids the request (already final, being processed, no callback set,
 * a secret rotation's overlap running), or, after the client's retries for up to `inFlightRetryMs`,
 * `idempotency conflict`: the key is still in flight (retry later with `idempotencyKey`).
 */
export class ConflictError extends PayoutsApiError {
  override name = 'ConflictError';
}
/** 422: refused on its merits (the receiver failed screening). Final: do not retry. */
export class UnprocessableError extends PayoutsApiError {
  override name = 'UnprocessableError';
}
/** 429: still rate limited after the client's retries. */
export class RateLimitError extends PayoutsApiError {
  override name = 'RateLimitError';
}
/** 5xx: still unavailable after the client's retries. */
export class ServiceUnavailableError extends PayoutsApiError {
  override name = 'ServiceUnavailableError';
}

const BY_STATUS: Record<number, typeof PayoutsApiError> = {
  400: InvalidRequestError,
  401: AuthenticationError,
  404: NotFoundError,
  409: ConflictError,
  422: UnprocessableError,
  429: RateLimitError,
};

/** The exception for an answer that is not 2xx, from its parsed body (the api's `{"error": message}`). */
export function errorOf(response: Response, body: unknown, idempotencyKey?: string): PayoutsApiError {
  const said = (body as { error?: unknown } | undefined)?.error;
  const message =
    typeof said === 'string' ? said : typeof body === 'string' && body ? body : response.statusText;
  const Type =
    BY_STATUS[response.status] ?? (response.status >= 500 ? ServiceUnavailableError : PayoutsApiError);
  return new Type(
    response.status,
    message,
    response.headers.get('x-request-id') ?? undefined,
    retryAfterSeconds(response),
    idempotencyKey,
  );
}

export function retryAfterSeconds(response: Response): number | undefined {
  const value = response.headers.get('retry-after');
  if (value === null || !/^\d+$/.test(value.trim())) return undefined;
  return Number(value);
}
