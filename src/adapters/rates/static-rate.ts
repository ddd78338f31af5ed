import { cachedQuote, type QuoteSource } from './cached-quote';

/**
 * QUOTE_SOURCE=static: the rate the operator set in FX_STATIC_RATE (a positive decimal string,
 * checked by config), for a deployment with no market source at all. There is no default rate:
 * config refuses this source without one. `quotedAt` is when it is handed out (it is the operator's
 * rate now); the cache only bounds how long `expires_at` promises it.
 */
export function createStaticRate(rate: string, opts: { cacheMs: number; now?: () => number }): QuoteSource {
  const now = opts.now ?? Date.now;
  return cachedQuote(async () => ({ rate, quotedAt: new Date(now()).toISOString() }), {
    ttlMs: opts.cacheMs,
    now,
  });
}
