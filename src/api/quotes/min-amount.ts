import { MIN_QUOTE_USDT_UNITS, minAmountUsdtUnits } from '../../domain/money';
import { HttpError } from '../errors';

/** The provider's spot rate (BRL per 1 USDT) as the api holds it, and until when it is reused. */
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
 * the preview of GET /v1/quotes, with the same errors (no rate: 503; under 0.01 USDT: 400).
 */
export async function quoteMinAmount(
  deps: MinAmountDeps,
  amountCentavos: bigint,
): Promise<{ minAmountUsdtUnits: bigint; expiresAt: string }> {
  const quote = await deps.quote().catch(() => {
    throw new HttpError(503, 'quote unavailable, retry later');
  });
  const minUnits = minAmountUsdtUnits(amountCentavos, quote.rate, deps.minAmountBuffer);
  if (minUnits < MIN_QUOTE_USDT_UNITS) {
    throw new HttpError(400, 'amount_brl is too small: min_amount_usdt must be at least 0.01');
  }
  return { minAmountUsdtUnits: minUnits, expiresAt: quote.expiresAt };
}
