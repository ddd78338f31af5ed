import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { findPartnerPayout } from '../../adapters/db/payouts-repo';
import type { Db } from '../../adapters/db/pool';
import { isTerminal, toPayoutResponse, type PayoutRecord, type SettlementNetwork } from '../../domain/payout';
import { cancelPayoutUpdate, PAYOUT_NOT_CANCELLABLE } from '../../workflows/payout.contract';
import { partnerOf, type Authenticate } from '../auth';
import { API_ERRORS } from '../errors';
import { CREATE_BUCKET } from '../rate-limit';
import { cancelPayoutParamsSchema } from './cancel.schemas';
import { idempotencyKeyOf } from './idempotency-key';
import { payoutOfPath } from './load-payout';
import { errorBodySchema, payoutResponseSchema } from './payout.schemas';

export interface PayoutCancelRoutesOptions {
  /** What a COMPLETED payout names of its chain. */
  network: SettlementNetwork;
  db: Db;
  temporal: Client;
  postRateLimitPerMinute: number;
  /** The one X-Api-Key check of the api (built once in app.ts). */
  authenticate: Authenticate;
  /** How long the api waits for the workflow's decision (it includes the provider's removal). */
  decisionWaitMs?: number;
}

/**
 * POST /v1/payouts/{id}/cancel (docs/api.md "Cancel a payout"). The payout's workflow decides between
 * the cancel and the payment (the cancelPayout update); the api only asks and words the answer.
 *
 * Idempotency: a successful cancel leaves its own record, the payout FAILED `cancelled`, which never
 * changes again. A request with an Idempotency-Key that finds its payout so answers that payout again
 * (200, `Idempotent-Replayed: true`) instead of 409; a refused cancel changed nothing, so asking again
 * is safe with or without a key (docs/decisions.md D38).
 */
export const payoutCancelRoutes: FastifyPluginAsyncZod<PayoutCancelRoutesOptions> = async (app, opts) => {
  const decisionWaitMs = opts.decisionWaitMs ?? 20_000;

  app.post(
    '/v1/payouts/:id/cancel',
    {
      // The payout's row is read with the API key, in one round trip (docs/decisions.md D78).
      onRequest: opts.authenticate.spending(CREATE_BUCKET, opts.postRateLimitPerMinute, 'key', payoutOfPath),
      schema: {
        summary: 'Cancel a PENDING payout',
        params: cancelPayoutParamsSchema,
        response: {
          200: payoutResponseSchema,
          400: errorBodySchema,
          401: errorBodySchema,
          404: errorBodySchema,
          409: errorBodySchema,
          429: errorBodySchema,
          503: errorBodySchema,
        },
      },
    },
    async (request, reply) => {
      const key = idempotencyKeyOf(request);
      const partnerId = partnerOf(request).id;
      // Read with the API key; not read (so none) for an id that is no UUID.
      const stored = request.prefetched?.payout ?? null;
      if (!stored) throw API_ERRORS.payoutNotFound();
      const { workflowId, runId: _storedRun, ...readModel } = stored;

      const answer = (payout: PayoutRecord) => {
        if (key !== undefined && wasCancelled(payout)) {
          return reply
            .code(200)
            .header('idempotent-replayed', 'true')
            .send(toPayoutResponse(payout, opts.network));
        }
        throw API_ERRORS.payoutFinal(payout.status);
      };
      if (isTerminal(readModel.status)) return answer(readModel);

      // By workflow id only: after an operator's reset the current run is the one that decides.
      const handle = opts.temporal.workflow.getHandle(workflowId);
      let cancelled: PayoutRecord;
      try {
        cancelled = await opts.temporal.withDeadline(Date.now() + decisionWaitMs, () =>
          handle.executeUpdate(cancelPayoutUpdate),
        );
      } catch (err) {
        const refusal = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
        if (refusal instanceof ApplicationFailure && refusal.type === PAYOUT_NOT_CANCELLABLE) {
          // Final by now (a second cancel that waited on a first one finds it cancelled: the same
          // answer as the first), or a payment is being applied. The workflow's own wording is for
          // its log: the partner's words are the api's.
          const now = await findPartnerPayout(opts.db, partnerId, readModel.id);
          if (now && isTerminal(now.status)) return answer(now);
          throw API_ERRORS.payoutBeingProcessed();
        }
        if (err instanceof WorkflowNotFoundError) {
          // The workflow closed since the read: it is final, and the read model says how.
          const now = await findPartnerPayout(opts.db, partnerId, readModel.id);
          if (now && isTerminal(now.status)) return answer(now);
        }
        request.log.warn({ err, payoutId: readModel.id }, 'cancel not decided in time');
        throw API_ERRORS.providerUnavailable();
      }
      return reply.code(200).send(toPayoutResponse(cancelled, opts.network));
    },
  );
};

function wasCancelled(payout: PayoutRecord): boolean {
  return payout.status === 'FAILED' && payout.failureReason === 'cancelled';
}
