import { z } from 'zod';
import { address, decimalString, int, optional, type ConfigIssue, type ConfigRule } from './values';

/** Where the api's rate comes from (docs/decisions.md D52), and what each source reads. */

export const QUOTE_SOURCES = ['provider', 'price-feeds', 'static'] as const;
export type QuoteSourceName = (typeof QUOTE_SOURCES)[number];

/** QUOTE_SOURCE as set, else the settlement mode's own: the feeds in treasury mode, the provider's quote otherwise. */
export function effectiveQuoteSource(env: {
  QUOTE_SOURCE?: unknown;
  SETTLEMENT_MODE?: unknown;
}): QuoteSourceName {
  if (typeof env.QUOTE_SOURCE === 'string' && (QUOTE_SOURCES as readonly string[]).includes(env.QUOTE_SOURCE))
    return env.QUOTE_SOURCE as QuoteSourceName;
  return env.SETTLEMENT_MODE === 'treasury' ? 'price-feeds' : 'provider';
}
export const QUOTE_VARIABLES = {
  QUOTE_CACHE_SECONDS: int(30, 0).refine((v) => v <= 30, 'must be at most 30 (docs/decisions.md D5)'),
  // Where the api's rate comes from (docs/decisions.md D52): the provider's quote, two Chainlink
  // feeds on the settlement chain, or the operator's own rate. Unset: the provider's in provider
  // mode, the feeds in treasury mode (a treasury deployment may have no provider quote at all).
  QUOTE_SOURCE: optional(z.enum(QUOTE_SOURCES)),
  // Chainlink feeds (AggregatorV3Interface) on the chain of EVM_RPC_URL; no default: an address is
  // always the operator's choice, checked at start.
  PRICE_FEED_BRL_USD_ADDRESS: optional(address),
  PRICE_FEED_USDT_USD_ADDRESS: optional(address),
  // A feed not updated for longer gives no rate. Chainlink's BRL/USD and USDT/USD feeds on Arbitrum
  // One update on a 0.25-0.5% move or at least every 24 h (their heartbeat); 25 h is one missed
  // heartbeat's delivery margin, never a day-old price past it (D52).
  PRICE_FEED_MAX_AGE_SECONDS: int(90_000, 60),
  // QUOTE_SOURCE=static only: the operator's rate, BRL per 1 USDT. No default anywhere.
  FX_STATIC_RATE: optional(
    decimalString.refine((v) => /[1-9]/.test(v), 'must be a positive decimal number (BRL per 1 USDT)'),
  ),
};

export const quoteSourceRules: ConfigRule = (env, reads) =>
  reads.has('QUOTE_SOURCE') ? quoteSourceIssues(env) : [];

/** A quote source without what it reads, or a rate given to a source that would ignore it. */
function quoteSourceIssues(env: Record<string, unknown>): ConfigIssue[] {
  const source = effectiveQuoteSource(env);
  const why = env.QUOTE_SOURCE
    ? `QUOTE_SOURCE=${source}`
    : `QUOTE_SOURCE=${source} (the default in treasury mode)`;
  const issues: ConfigIssue[] = [];
  if (source === 'price-feeds') {
    for (const name of ['PRICE_FEED_BRL_USD_ADDRESS', 'PRICE_FEED_USDT_USD_ADDRESS'])
      if (!env[name]) issues.push({ code: 'custom', path: [name], message: `is required when ${why}` });
  }
  if (source === 'static' && !env.FX_STATIC_RATE)
    issues.push({
      code: 'custom',
      path: ['FX_STATIC_RATE'],
      message: 'is required when QUOTE_SOURCE=static (there is no default rate)',
    });
  // An API Pix institution quotes nothing: its deployments have no provider to ask. (Outside treasury
  // mode the settlement mode is what is wrong, and says so.)
  if (source === 'provider' && env.PIX_PROVIDER === 'bcb-api-pix' && env.SETTLEMENT_MODE === 'treasury')
    issues.push({
      code: 'custom',
      path: ['QUOTE_SOURCE'],
      message: 'provider is not a rate source with PIX_PROVIDER=bcb-api-pix: use price-feeds or static',
    });
  if (source !== 'static' && env.FX_STATIC_RATE)
    issues.push({
      code: 'custom',
      path: ['FX_STATIC_RATE'],
      message: `is read only when QUOTE_SOURCE=static, not with ${why}: unset it or set QUOTE_SOURCE=static`,
    });
  return issues;
}
