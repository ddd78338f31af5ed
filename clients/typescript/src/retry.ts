import { RequestTimeoutError, retryAfterSeconds } from './errors';

export interface RetryOptions {
  /** Retries after the first attempt of a 429, a 5xx or a network failure (default 3). */
  maxRetries?: number;
  /** First backoff when the api gives no Retry-After, doubled per retry (default 500 ms). */
  initialDelayMs?: number;
  /** No single wait is longer, Retry-After included (default 60 s). */
  maxDelayMs?: number;
  /**
   * How long a call keeps asking again while the api answers 409 `idempotency conflict` (the same
   * Idempotency-Key is still being processed), from the first such answer (default 60 s: the api
   * settles a key in flight within about a minute). These retries do not count in `maxRetries`.
   */
  inFlightRetryMs?: number;
  /**
   * Each attempt's limit, from sending the request to the last byte of the answer (default 30 s).
   * An attempt past it is abandoned: retried like a network failure, else RequestTimeoutError.
   */
  timeoutMs?: number;
}

/** Options of one call. */
export interface CallOptions {
  /**
   * Ends the call (every attempt and every wait between them) when it aborts: the call rejects with
   * the signal's reason. `AbortSignal.timeout(ms)` bounds a whole call, retries included.
   */
  signal?: AbortSignal;
  /** This call's attempt limit, instead of the client's `timeoutMs`. */
  timeoutMs?: number;
}

/** The api's message for a request whose Idempotency-Key is still being processed. */
const IN_FLIGHT = 'idempotency conflict';
/** Waits for a key in flight grow from initialDelayMs to this, not beyond: it settles within a minute. */
const IN_FLIGHT_MAX_DELAY_MS = 5_000;
/** Statuses whose answer has no body. */
const NO_BODY = new Set([101, 204, 205, 304]);

/**
 * A fetch that retries what is safe to retry: 429 (the api refused before doing anything), 409
 * `idempotency conflict` (the same key still in flight: for up to `inFlightRetryMs`), and 5xx or a
 * network failure, but those only for a request that cannot act twice: a GET, PUT or DELETE, or one
 * carrying an Idempotency-Key. The same Request is sent again, so a retry carries the same
 * Idempotency-Key. Waits the answer's Retry-After when it has one, else an exponential backoff.
 * Every attempt has a time limit, and the call's signal ends it at any moment.
 */
export function retryingFetch(
  base: (request: Request) => Promise<Response>,
  options: RetryOptions = {},
  call: CallOptions = {},
): (request: Request) => Promise<Response> {
  const maxRetries = options.maxRetries ?? 3;
  const initialDelayMs = options.initialDelayMs ?? 500;
  const maxDelayMs = options.maxDelayMs ?? 60_000;
  const inFlightRetryMs = options.inFlightRetryMs ?? 60_000;
  const timeoutMs = call.timeoutMs ?? options.timeoutMs ?? 30_000;
  const { signal } = call;
  return async (request) => {
    signal?.throwIfAborted();
    // PUT /v1/callback answers the new signing secret only to the call that created it: a retry after
    // a lost answer would get none, so it is not repeated (rotate-secret gives a new one if needed).
    const createsSecret = request.method === 'PUT' && new URL(request.url).pathname.endsWith('/v1/callback');
    const repeatable =
      !createsSecret &&
      (['GET', 'HEAD', 'PUT', 'DELETE'].includes(request.method) || request.headers.has('idempotency-key'));
    let retries = 0;
    let inFlightSince: number | undefined;
    let inFlightWaits = 0;
    for (;;) {
      const backoff = Math.min(initialDelayMs * 2 ** retries, maxDelayMs);
      let response: Response;
      try {
        response = await attempt(base, request, timeoutMs, signal);
      } catch (err) {
        if (signal?.aborted || retries >= maxRetries || !repeatable) throw err;
        retries += 1;
        await sleep(backoff, signal);
        continue;
      }
      if (await isInFlight(response)) {
        inFlightSince ??= Date.now();
        const wait = Math.min(initialDelayMs * 2 ** inFlightWaits, IN_FLIGHT_MAX_DELAY_MS, maxDelayMs);
        if (Date.now() + wait - inFlightSince > inFlightRetryMs) return response;
        inFlightWaits += 1;
        await sleep(wait, signal);
        continue;
      }
      if (retries >= maxRetries || !worthRetrying(response, repeatable)) return response;
      const told = retryAfterSeconds(response);
      retries += 1;
      await sleep(told === undefined ? backoff : Math.min(told * 1000, maxDelayMs), signal);
    }
  };
}

/**
 * One attempt within `timeoutMs`, the whole answer read (a body that stalls is a failed attempt
 * too, not a hang in the caller's parsing). Rejects with RequestTimeoutError past the limit, with
 * the signal's reason when the caller aborts.
 */
async function attempt(
  base: (request: Request) => Promise<Response>,
  request: Request,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<Response> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new RequestTimeoutError(timeoutMs)), timeoutMs);
  const onAbort = () => controller.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await raced(
      (async () => {
        const response = await base(new Request(request.clone(), { signal: controller.signal }));
        const body = await response.arrayBuffer();
        return new Response(NO_BODY.has(response.status) ? null : body, {
          status: response.status,
          statusText: response.statusText,
          headers: response.headers,
        });
      })(),
      controller.signal,
    );
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/** `work`, or the signal's reason as soon as it aborts (a fetch of the caller's may ignore it). */
function raced<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work
      .then(resolve, (err: unknown) => reject(signal.aborted ? signal.reason : err))
      .finally(() => signal.removeEventListener('abort', onAbort));
  });
}

async function isInFlight(response: Response): Promise<boolean> {
  if (response.status !== 409) return false;
  const body = (await response
    .clone()
    .json()
    .catch(() => undefined)) as { error?: unknown } | undefined;
  return body?.error === IN_FLIGHT;
}

function worthRetrying(response: Response, repeatable: boolean): boolean {
  if (response.status === 429) return true;
  return response.status >= 500 && repeatable;
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
