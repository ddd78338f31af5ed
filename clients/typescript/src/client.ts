import { randomUUID } from 'node:crypto';
import createClient from 'openapi-fetch';
import { errorOf, RequestFailedError, RequestTimeoutError } from './errors';
import { retryingFetch, type CallOptions, type RetryOptions } from './retry';
import type { operations, paths } from './schema';
import type { Payout } from './verify-callback';

type Json<O, S extends number> = O extends {
  responses: Record<S, { content: { 'application/json': infer B } }>;
}
  ? B
  : never;
type Body<O> = O extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;

export type CreatePayoutRequest = Body<operations['createPayout']>;
export type ListPayoutsQuery = NonNullable<operations['listPayouts']['parameters']['query']>;
export type PayoutPage = Json<operations['listPayouts'], 200>;
export type Quote = Json<operations['previewQuote'], 200>;
export type CallbackSettings = Json<operations['getCallback'], 200>;
export type SetCallbackResult = Json<operations['setCallback'], 200>;
export type RotatedSecret = Json<operations['rotateCallbackSecret'], 200>;
export type TestCallbackResult = Json<operations['sendTestCallback'], 200>;
export type CallbackEventList = Json<operations['listCallbackEvents'], 200>;
export type CallbackEventItem = CallbackEventList['data'][number];

/** A page of GET /v1/callback/events: `limit` 1-100 (default 20), `starting_after` an event_id. */
export interface CallbackEventsQuery {
  limit?: number;
  starting_after?: string;
}

export interface PayoutsClientOptions extends RetryOptions {
  /** The api's base URL, e.g. https://payouts.example */
  baseUrl: string;
  apiKey: string;
  /** Another fetch (a proxy agent, tests); the global one by default. */
  fetch?: (request: Request) => Promise<Response>;
}

/** Each call may be given its own Idempotency-Key (your order id); one is generated when it is not. */
export interface IdempotentCall extends CallOptions {
  idempotencyKey?: string;
}

/**
 * The partner API, typed from its OpenAPI document (schema.ts). Every method resolves to the
 * answer's body or throws a PayoutsApiError (errors.ts), a RequestTimeoutError, or the reason of
 * the call's aborted signal (for createPayout and cancelPayout, a RequestFailedError carrying the
 * key, with that reason or network failure as its cause); retries follow retry.ts. Every method takes CallOptions last.
 */
export function createPayoutsClient(options: PayoutsClientOptions) {
  const base = options.fetch ?? ((request: Request) => fetch(request));
  const api = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { 'x-api-key': options.apiKey },
  });
  /** What each call hands openapi-fetch: the retrying fetch of this call's options. */
  const via = (call?: CallOptions) => ({
    fetch: retryingFetch(base, options, {
      ...(call?.signal ? { signal: call.signal } : {}),
      ...(call?.timeoutMs === undefined ? {} : { timeoutMs: call.timeoutMs }),
    }),
  });
  /** The answer's body, or its error; an idempotent call's errors carry the key it sent. */
  const unwrap = async <T>(
    call: Promise<{ data?: T; error?: unknown; response: Response }>,
    idempotencyKey?: string,
  ): Promise<T> => {
    let answer: { data?: T; error?: unknown; response: Response };
    try {
      answer = await call;
    } catch (err) {
      if (idempotencyKey === undefined) throw err;
      if (err instanceof RequestTimeoutError) throw new RequestTimeoutError(err.timeoutMs, idempotencyKey);
      // No answer, and the server may have acted: whatever failed, the key to retry with goes along.
      throw new RequestFailedError(idempotencyKey, { cause: err });
    }
    const { data, error, response } = answer;
    if (!response.ok) throw errorOf(response, error, idempotencyKey);
    return data as T;
  };
  const keyOf = (call?: IdempotentCall) => call?.idempotencyKey ?? randomUUID();
  const eventsQuery = (query: CallbackEventsQuery | number) => {
    const q = typeof query === 'number' ? { limit: query } : query;
    return {
      ...(q.limit === undefined ? {} : { limit: String(q.limit) }),
      ...(q.starting_after === undefined ? {} : { starting_after: q.starting_after }),
    };
  };

  const client = {
    createPayout: (body: CreatePayoutRequest, call?: IdempotentCall): Promise<Payout> => {
      const key = keyOf(call);
      return unwrap(
        api.POST('/v1/payouts', { body, params: { header: { 'Idempotency-Key': key } }, ...via(call) }),
        key,
      );
    },
    getPayout: (id: string, call?: CallOptions): Promise<Payout> =>
      unwrap(api.GET('/v1/payouts/{id}', { params: { path: { id } }, ...via(call) })),
    listPayouts: (query: ListPayoutsQuery = {}, call?: CallOptions): Promise<PayoutPage> =>
      unwrap(api.GET('/v1/payouts', { params: { query }, ...via(call) })),
    /** Every payout matching `query`, newest first, page after page (`starting_after`) until the last. */
    async *iteratePayouts(
      query: Omit<ListPayoutsQuery, 'starting_after'> = {},
      call?: CallOptions,
    ): AsyncGenerator<Payout> {
      let after: string | undefined;
      for (;;) {
        const page = await client.listPayouts(
          { ...query, ...(after ? { starting_after: after } : {}) },
          call,
        );
        yield* page.data;
        const last = page.data.at(-1);
        if (!page.has_more || !last) return;
        after = last.id;
      }
    },
    cancelPayout: (id: string, call?: IdempotentCall): Promise<Payout> => {
      const key = keyOf(call);
      return unwrap(
        api.POST('/v1/payouts/{id}/cancel', {
          params: { path: { id }, header: { 'Idempotency-Key': key } },
          ...via(call),
        }),
        key,
      );
    },
    previewQuote: (amountBrl: number, call?: CallOptions): Promise<Quote> =>
      unwrap(api.GET('/v1/quotes', { params: { query: { amount_brl: amountBrl } as never }, ...via(call) })),
    getCallback: (call?: CallOptions): Promise<CallbackSettings> =>
      unwrap(api.GET('/v1/callback', via(call))),
    setCallback: (url: string, call?: CallOptions): Promise<SetCallbackResult> =>
      unwrap(api.PUT('/v1/callback', { body: { url }, ...via(call) })),
    deleteCallback: (call?: CallOptions): Promise<CallbackSettings> =>
      unwrap(api.DELETE('/v1/callback', via(call))),
    rotateCallbackSecret: (overlapSeconds = 0, call?: CallOptions): Promise<RotatedSecret> =>
      unwrap(
        api.POST('/v1/callback/rotate-secret', { body: { overlap_seconds: overlapSeconds }, ...via(call) }),
      ),
    sendTestCallback: (call?: CallOptions): Promise<TestCallbackResult> =>
      unwrap(api.POST('/v1/callback/test', via(call))),
    /** One page of your callback events, newest first (a number is the page's `limit`). */
    listCallbackEvents: (
      query: CallbackEventsQuery | number = {},
      call?: CallOptions,
    ): Promise<CallbackEventList> =>
      unwrap(
        api.GET('/v1/callback/events', { params: { query: eventsQuery(query) as never }, ...via(call) }),
      ),
    /** Every callback event, newest first, page after page (`starting_after`) until the last. */
    async *iterateCallbackEvents(
      query: Omit<CallbackEventsQuery, 'starting_after'> = {},
      call?: CallOptions,
    ): AsyncGenerator<CallbackEventItem> {
      let after: string | undefined;
      for (;;) {
        const page = await client.listCallbackEvents(
          { ...query, ...(after ? { starting_after: after } : {}) },
          call,
        );
        yield* page.data;
        const last = page.data.at(-1);
        if (!page.has_more || !last) return;
        after = last.event_id;
      }
    },
  };
  return client;
}

export type PayoutsClient = ReturnType<typeof createPayoutsClient>;
