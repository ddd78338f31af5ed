import { randomUUID } from 'node:crypto';
import createClient from 'openapi-fetch';
import { errorOf } from './errors';
import { retryingFetch, type RetryOptions } from './retry';
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

export interface PayoutsClientOptions extends RetryOptions {
  /** The api's base URL, e.g. https://payouts.example */
  baseUrl: string;
  apiKey: string;
  /** Another fetch (a proxy agent, tests); the global one by default. */
  fetch?: (request: Request) => Promise<Response>;
}

/** Each call may be given its own Idempotency-Key (your order id); one is generated when it is not. */
export interface IdempotentCall {
  idempotencyKey?: string;
}

/**
 * The partner API, typed from its OpenAPI document (schema.ts). Every method resolves to the
 * answer's body or throws a PayoutsApiError (errors.ts); retries follow retry.ts.
 */
export function createPayoutsClient(options: PayoutsClientOptions) {
  const api = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { 'x-api-key': options.apiKey },
    fetch: retryingFetch(options.fetch ?? ((request) => fetch(request)), options),
  });
  const unwrap = async <T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> => {
    const { data, error, response } = await call;
    if (!response.ok) throw errorOf(response, error);
    return data as T;
  };
  const key = (call?: IdempotentCall) => ({ 'Idempotency-Key': call?.idempotencyKey ?? randomUUID() });

  const client = {
    createPayout: (body: CreatePayoutRequest, call?: IdempotentCall): Promise<Payout> =>
      unwrap(api.POST('/v1/payouts', { body, params: { header: key(call) } })),
    getPayout: (id: string): Promise<Payout> =>
      unwrap(api.GET('/v1/payouts/{id}', { params: { path: { id } } })),
    listPayouts: (query: ListPayoutsQuery = {}): Promise<PayoutPage> =>
      unwrap(api.GET('/v1/payouts', { params: { query } })),
    /** Every payout matching `query`, newest first, page after page (`starting_after`) until the last. */
    async *iteratePayouts(query: Omit<ListPayoutsQuery, 'starting_after'> = {}): AsyncGenerator<Payout> {
      let after: string | undefined;
      for (;;) {
        const page = await client.listPayouts({ ...query, ...(after ? { starting_after: after } : {}) });
        yield* page.data;
        const last = page.data.at(-1);
        if (!page.has_more || !last) return;
        after = last.id;
      }
    },
    cancelPayout: (id: string, call?: IdempotentCall): Promise<Payout> =>
      unwrap(api.POST('/v1/payouts/{id}/cancel', { params: { path: { id }, header: key(call) } })),
    previewQuote: (amountBrl: number): Promise<Quote> =>
      unwrap(api.GET('/v1/quotes', { params: { query: { amount_brl: amountBrl } as never } })),
    getCallback: (): Promise<CallbackSettings> => unwrap(api.GET('/v1/callback')),
    setCallback: (url: string): Promise<SetCallbackResult> =>
      unwrap(api.PUT('/v1/callback', { body: { url } })),
    deleteCallback: (): Promise<CallbackSettings> => unwrap(api.DELETE('/v1/callback')),
    rotateCallbackSecret: (overlapSeconds = 0): Promise<RotatedSecret> =>
      unwrap(api.POST('/v1/callback/rotate-secret', { body: { overlap_seconds: overlapSeconds } })),
    sendTestCallback: (): Promise<TestCallbackResult> => unwrap(api.POST('/v1/callback/test')),
    listCallbackEvents: (limit?: number): Promise<CallbackEventList> =>
      unwrap(
        api.GET('/v1/callback/events', {
          params: { query: limit === undefined ? {} : ({ limit: String(limit) } as never) },
        }),
      ),
  };
  return client;
}

export type PayoutsClient = ReturnType<typeof createPayoutsClient>;
