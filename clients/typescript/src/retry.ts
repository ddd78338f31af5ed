import { retryAfterSeconds } from './errors';

export interface RetryOptions {
  /** Retries after the first attempt (default 3). */
  maxRetries?: number;
  /** First backoff when the api gives no Retry-After, doubled per retry (default 500 ms). */
  initialDelayMs?: number;
  /** No single wait is longer, Retry-After included (default 60 s). */
  maxDelayMs?: number;
}

/** The api's message for a request whose Idempotency-Key is still being processed. */
const IN_FLIGHT = 'idempotency conflict';

/**
 * A fetch that retries what is safe to retry: 429 (the api refused before doing anything), 409
 * `idempotency conflict` (the same key still in flight), and 5xx or a network failure, but those
 * only for a request that cannot act twice: a GET, PUT or DELETE, or one carrying an
 * Idempotency-Key. The same Request is sent again, so a retry carries the same Idempotency-Key.
 * Waits the answer's Retry-After when it has one, else an exponential backoff.
 */
export function retryingFetch(
  base: (request: Request) => Promise<Response>,
  options: RetryOptions = {},
): (request: Request) => Promise<Response> {
  const maxRetries = options.maxRetries ?? 3;
  const initialDelayMs = options.initialDelayMs ?? 500;
  const maxDelayMs = options.maxDelayMs ?? 60_000;
  return async (request) => {
    // PUT /v1/callback answers the new signing secret only to the call that created it: a retry after
    // a lost answer would get none, so it is not repeated (rotate-secret gives a new one if needed).
    const createsSecret = request.method === 'PUT' && new URL(request.url).pathname.endsWith('/v1/callback');
    const repeatable =
      !createsSecret &&
      (['GET', 'HEAD', 'PUT', 'DELETE'].includes(request.method) || request.headers.has('idempotency-key'));
    for (let attempt = 0; ; attempt++) {
      const backoff = Math.min(initialDelayMs * 2 ** attempt, maxDelayMs);
      const last = attempt >= maxRetries;
      let response: Response;
      try {
        response = await base(request.clone());
      } catch (err) {
        if (last || !repeatable) throw err;
        await sleep(backoff);
        continue;
      }
      if (last || !(await worthRetrying(response, repeatable))) return response;
      const told = retryAfterSeconds(response);
      await response.body?.cancel();
      await sleep(told === undefined ? backoff : Math.min(told * 1000, maxDelayMs));
    }
  };
}

async function worthRetrying(response: Response, repeatable: boolean): Promise<boolean> {
  if (response.status === 429) return true;
  if (response.status >= 500) return repeatable;
  if (response.status !== 409) return false;
  const body = (await response
    .clone()
    .json()
    .catch(() => undefined)) as { error?: unknown } | undefined;
  return body?.error === IN_FLIGHT;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
