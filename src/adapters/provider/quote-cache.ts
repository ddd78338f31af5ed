import { cachedQuote, type CachedQuoteOptions, type QuoteSource } from '../rates/cached-quote';
import type { PaymentProvider } from './types';

export type { CachedQuoteOptions, Quote } from '../rates/cached-quote';

/** QUOTE_SOURCE=provider: the provider's quote endpoint, cached as every source is (rates/cached-quote.ts). */
export function createCachedQuote(
  provider: Pick<PaymentProvider, 'getQuote'>,
  opts: CachedQuoteOptions,
): QuoteSource {
  return cachedQuote(() => provider.getQuote(), opts);
}
