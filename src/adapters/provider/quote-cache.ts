import type { PaymentProvider } from './types';

export interface CachedQuoteOptions {
  /** Oldest quote handed out, measured from when its request started. docs/decisions.md D5: at most 30 s. */
  ttlMs: number;
  now?: () => number;
}

/** `expiresAt` (ISO 8601): when this cache stops handing the quote out and asks the provider again. */
export type Quote = { rate: string; quotedAt: string; expiresAt: string };

/**
 * Wraps the provider's quote endpoint for the payout API, which needs a rate on every create.
 *
 * - A quote is reused for at most `ttlMs`, counted from when it was requested (not received), so a
 *   slow provider cannot make a quote older than the bound.
 * - Concurrent callers during a fetch share that one request: a burst of creates after expiry costs one
 *   provider call, not one per request.
 * - Failures are not cached: each caller that arrives after a failure triggers a fresh attempt. Callers
 *   that were waiting on the failed request all get its error ("no rate, no payout").
 */
export function createCachedQuote(
  provider: Pick<PaymentProvider, 'getQuote'>,
  opts: CachedQuoteOptions,
): () => Promise<Quote> {
  const now = opts.now ?? Date.now;
  let cached: { quote: Quote; requestedAt: number } | undefined;
  let inFlight: Promise<Quote> | undefined;

  return function getQuote(): Promise<Quote> {
    if (cached && now() - cached.requestedAt < opts.ttlMs) return Promise.resolve(cached.quote);
    if (inFlight) return inFlight;

    const requestedAt = now();
    const request = provider.getQuote().then(
      (q) => {
        const expiresAt = new Date(requestedAt + opts.ttlMs).toISOString();
        const quote = { rate: q.rate, quotedAt: q.quotedAt, expiresAt };
        cached = { quote, requestedAt };
        inFlight = undefined;
        return quote;
      },
      (err: unknown) => {
        inFlight = undefined;
        throw err;
      },
    );
    inFlight = request;
    return request;
  };
}
