import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { centavosToNumber, usdtUnitsToNumber } from '../../domain/money';
import type { Authenticate } from '../auth';
import { errorBodySchema } from '../payouts/payout.schemas';
import { READ_BUCKET } from '../rate-limit';
import { quoteMinAmount, type MinAmountDeps } from './min-amount';
import { quoteQuerySchema, quoteResponseSchema } from './quote.schemas';

export interface QuoteRoutesOptions extends MinAmountDeps {
  maxAmountCentavos: bigint;
  readRateLimitPerMinute: number;
  /** The one X-Api-Key check of the api (built once in app.ts). */
  authenticate: Authenticate;
}

/**
 * GET /v1/quotes?amount_brl=: what POST /v1/payouts would fix as `min_amount_usdt` for that amount
 * now, computed by the same code. Not binding: the rate may change before the payout is created;
 * `expires_at` is when the rate in use is next refreshed.
 */
export const quoteRoutes: FastifyPluginAsyncZod<QuoteRoutesOptions> = async (app, opts) => {
  app.get(
    '/v1/quotes',
    {
      onRequest: opts.authenticate.spending(READ_BUCKET, opts.readRateLimitPerMinute),
      schema: {
        summary: 'Preview a quote',
        querystring: quoteQuerySchema(opts.maxAmountCentavos),
        response: {
          200: quoteResponseSchema,
          400: errorBodySchema,
          401: errorBodySchema,
          429: errorBodySchema,
          503: errorBodySchema,
        },
      },
    },
    async (request) => {
      const amountCentavos = request.query.amount_brl;
      const quote = await quoteMinAmount(opts, amountCentavos);
      return {
        amount_brl: centavosToNumber(amountCentavos),
        min_amount_usdt: usdtUnitsToNumber(quote.minAmountUsdtUnits),
        expires_at: quote.expiresAt,
      };
    },
  );
};
