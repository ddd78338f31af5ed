/**
 * The api's rate, whatever its source (QUOTE_SOURCE, docs/configuration.md): BRL per 1 USDT as a
 * decimal string, when its source quoted it, and until when the api reuses it. `expiresAt` (ISO
 * 8601) is what GET /v1/quotes shows partners as `expires_at`.
 */
export type Quote = { rate: string; quotedAt: string; expiresAt: string };

/** The narrow interface the api quotes through: a rate now, or a rejection (no rate, no payout). */
export type QuoteSource = () => Promise<Quote>;

/** What a source answers: the rate, when it was quoted, and optionally the last instant it may be used. */
export interface SourcedRate {
  rate: string;
  quotedAt: string;
  /** Epoch ms past which the rate must not be handed out, whatever the cache's TTL (a feed turning stale). */
  usableUntil?: number;
}

export interface CachedQuoteOptions {
  /** Oldest quote handed out, measured from when its request started. docs/decisions.md D5: at most 30 s. */
  ttlMs: number;
  now?: () => number;
}

/**
 * Wraps a rate source for the payout API, which needs a rate on every create.
 *
 * - A quote is reused for at most `ttlMs`, counted from when it was requested (not received), so a
 *   slow source cannot make a quote older than the bound; never past the source's `usableUntil`.
 * - Concurrent callers during a fetch share that one request: a burst of creates after expiry costs one
 *   call to the source, not one per request.
 * - Failures are not cached: each caller that arrives after a failure triggers a fresh attempt. Callers
 *   that were waiting on the failed request all get its error ("no rate, no payout").
 */
export function cachedQuote(fetch: () => Promise<SourcedRate>, opts: CachedQuoteOptions): QuoteSource {
  const now = opts.now ?? Date.now;
  let cached: { quote: Quote; until: number } | undefined;
  let inFlight: Promise<Quote> | undefined;

  return function getQuote(): Promise<Quote> {
    if (cached && now() < cached.until) return Promise.resolve(cached.quote);
    if (inFlight) return inFlight;

    const requestedAt = now();
    const request = fetch().then(
      (q) => {
        const until = Math.min(requestedAt + opts.ttlMs, q.usableUntil ?? Infinity);
        const quote = { rate: q.rate, quotedAt: q.quotedAt, expiresAt: new Date(until).toISOString() };
        cached = { quote, until };
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
