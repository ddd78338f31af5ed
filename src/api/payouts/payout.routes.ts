import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Db } from '../../adapters/db/pool';
import { findRecordedKey } from '../../adapters/db/idempotency-repo';
import { toPayoutResponse, type SettlementNetwork } from '../../domain/payout';
import { partnerOf, type Authenticate } from '../auth';
import { API_ERRORS } from '../errors';
import { CREATE_BUCKET, READ_BUCKET } from '../rate-limit';
import { createPayout, replayedRefusal, type CreatePayoutDeps } from './create-payout';
import { parseJsonWithExactAmount } from './exact-json-body';
import { idempotencyKeyOf, validIdempotencyKeyOf } from './idempotency-key';
import { loadPartnerPayout, payoutOfPath } from './load-payout';
import {
  createPayoutBodySchema,
  errorBodySchema,
  payoutIdParamsSchema,
  payoutResponseSchema,
} from './payout.schemas';

export interface PayoutRoutesOptions extends CreatePayoutDeps {
  /** What a COMPLETED payout names of its chain. */
  network: SettlementNetwork;
  db: Db;
  maxAmountCentavos: bigint;
  postRateLimitPerMinute: number;
  readRateLimitPerMinute: number;
  /** The one X-Api-Key check of the api (built once in app.ts). */
  authenticate: Authenticate;
}

const errorResponses = {
  400: errorBodySchema,
  401: errorBodySchema,
  409: errorBodySchema,
  422: errorBodySchema,
  429: errorBodySchema,
  502: errorBodySchema,
  503: errorBodySchema,
};

/** POST /v1/payouts and GET /v1/payouts/{id} (docs/api.md). */
export const payoutRoutes: FastifyPluginAsyncZod<PayoutRoutesOptions> = async (app, opts) => {
  const loadDeps = { db: opts.db, temporal: opts.temporal };
  parseJsonWithExactAmount(app);

  const replay = async (partnerId: string, payoutId: string) => {
    const payout = await loadPartnerPayout(loadDeps, partnerId, payoutId);
    if (!payout)
      throw new Error(`idempotency key maps to payout ${payoutId}, which is not in the read model`);
    return toPayoutResponse(payout, opts.network);
  };

  app.post(
    '/v1/payouts',
    {
      // The key's recorded answer is read with the API key, in one round trip (docs/decisions.md D78).
      onRequest: opts.authenticate.spending(CREATE_BUCKET, opts.postRateLimitPerMinute, 'key', (request) => {
        const key = validIdempotencyKeyOf(request);
        return key === undefined ? {} : { idempotencyKey: key };
      }),
      // A replayed key returns the original payout whatever the new body says (docs/api.md "Idempotency"
      // rule 2): answered before the body is even parsed, so malformed JSON, a wrong content-type or
      // an oversized body do not turn a replay into an error.
      preParsing: async (request, reply, payload) => {
        const key = idempotencyKeyOf(request);
        const prefetched = request.prefetched?.recordedKey;
        const recorded =
          key === undefined
            ? null
            : prefetched !== undefined
              ? prefetched
              : await findRecordedKey(opts.db, partnerOf(request).id, key);
        if (!recorded) return payload;
        if (recorded.refusal !== null) throw replayedRefusal(recorded.refusal);
        const payout = await replay(partnerOf(request).id, recorded.payoutId);
        return reply.code(201).header('idempotent-replayed', 'true').send(payout);
      },
      schema: {
        summary: 'Create a payout',
        body: createPayoutBodySchema(opts.maxAmountCentavos),
        response: { 201: payoutResponseSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const partner = partnerOf(request);
      const result = await createPayout(
        opts,
        partner.id,
        request.body,
        idempotencyKeyOf(request),
        request.log,
      );
      if (result.kind === 'replay') {
        return reply
          .code(201)
          .header('idempotent-replayed', 'true')
          .send(await replay(partner.id, result.payoutId));
      }
      return reply.code(201).send(toPayoutResponse(result.payout, opts.network));
    },
  );

  app.get(
    '/v1/payouts/:id',
    {
      // The payout's row is read with the API key, in one round trip (docs/decisions.md D78).
      onRequest: opts.authenticate.spending(READ_BUCKET, opts.readRateLimitPerMinute, 'key', payoutOfPath),
      schema: {
        summary: 'Read a payout',
        params: payoutIdParamsSchema,
        response: {
          200: payoutResponseSchema,
          401: errorBodySchema,
          404: errorBodySchema,
          429: errorBodySchema,
        },
      },
    },
    async (request) => {
      const payout = await loadPartnerPayout(
        loadDeps,
        partnerOf(request).id,
        request.params.id,
        request.prefetched?.payout,
      );
      if (!payout) throw API_ERRORS.payoutNotFound();
      return toPayoutResponse(payout, opts.network);
    },
  );
};
