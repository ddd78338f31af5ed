import { MIN_QUOTE_USDT_UNITS, minAmountUsdtUnits } from '../../domain/money';
import {
  AmountTooSmallError,
  QuoteStaleError,
  QuoteUnavailableError,
} from '../../domain/payout-request-errors';
import { RateUnavailableError } from '../../domain/rate';

/** The spot rate (BRL per 1 USDT) as the api holds it, from its QUOTE_SOURCE, and until when it is reused. */
export interface RateQuote {
  rate: string;
  /** ISO 8601: after this the api fetches a new rate, so a later quote or payout may differ. */
  expiresAt: string;
}

export interface MinAmountDeps {
  quote: () => Promise<RateQuote>;
  minAmountBuffer: string;
}

/**
 * The one computation of `min_amount_usdt` for an amount: the binding one of POST /v1/payouts and
 * the preview of GET /v1/quotes, with the same errors (no rate, or under 0.01 USDT: domain errors the error handler maps).
 */
export async function quoteMinAmount(
  deps: MinAmountDeps,
  amountCentavos: bigint,
): Promise<{ minAmountUsdtUnits: bigint; expiresAt: string; rate: string }> {
  const quote = await deps.quote().catch((cause: unknown) => {
    if (cause instanceof RateUnavailableError && cause.reason === 'stale')
      throw new QuoteStaleError(cause.message, { cause });
    throw new QuoteUnavailableError(`the quote failed: ${errorText(cause)}`, { cause });
  });
  const minUnits = minAmountUsdtUnits(amountCentavos, quote.rate, deps.minAmountBuffer);
  if (minUnits < MIN_QUOTE_USDT_UNITS) {
    throw new AmountTooSmallError(`min_amount_usdt would be ${minUnits} base units, below the minimum quote`);
  }
  return { minAmountUsdtUnits: minUnits, expiresAt: quote.expiresAt, rate: quote.rate };
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));
