import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { listPartnerPayouts } from '../../adapters/db/payouts-repo';
import type { Db } from '../../adapters/db/pool';
import { toPayoutResponse, type SettlementNetwork } from '../../domain/payout';
import { partnerOf, type Authenticate } from '../auth';
import { API_ERRORS } from '../errors';
import { READ_BUCKET } from '../rate-limit';
import { LIST_LIMIT_DEFAULT, listPayoutsQuerySchema, payoutListResponseSchema } from './list.schemas';
import { errorBodySchema } from './payout.schemas';

export interface PayoutListRoutesOptions {
  /** What a COMPLETED payout names of its chain. */
  network: SettlementNetwork;
  db: Db;
  readRateLimitPerMinute: number;
  /** The one X-Api-Key check of the api (built once in app.ts). */
  authenticate: Authenticate;
}

/**
 * GET /v1/payouts: the caller's payouts, newest first, one page at a time, from the PostgreSQL read
 * model (every state change of a payout is written there). A reconciliation pages with
 * `starting_after` = the last id of the previous page until `has_more` is false.
 */
export const payoutListRoutes: FastifyPluginAsyncZod<PayoutListRoutesOptions> = async (app, opts) => {
  app.get(
    '/v1/payouts',
    {
      onRequest: opts.authenticate.spending(READ_BUCKET, opts.readRateLimitPerMinute),
      schema: {
        summary: 'List payouts',
        querystring: listPayoutsQuerySchema,
        response: {
          200: payoutListResponseSchema,
          400: errorBodySchema,
          401: errorBodySchema,
          429: errorBodySchema,
        },
      },
    },
    async (request) => {
      const query = request.query;
      const page = await listPartnerPayouts(opts.db, {
        partnerId: partnerOf(request).id,
        status: query.status,
        createdAtGte: query['created_at[gte]'],
        createdAtLt: query['created_at[lt]'],
        startingAfter: query.starting_after,
        limit: query.limit ?? LIST_LIMIT_DEFAULT,
      });
      if (!page) throw API_ERRORS.startingAfterUnknown();
      return { data: page.payouts.map((p) => toPayoutResponse(p, opts.network)), has_more: page.hasMore };
    },
  );
};
