import { createHash } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Db } from '../../adapters/db/pool';
import { isWebhookTokenRecorded, recordWebhookToken } from '../../adapters/db/webhook-tokens-repo';
import type { Metrics } from '../../observability/metrics';
import { providerEventWorkflowId } from '../../workflows/provider-event.contract';
import { providerEventWorkflow } from '../../workflows/provider-event.workflow';
import { errorBodySchema } from '../payouts/payout.schemas';
import { API_ERRORS } from '../errors';
import { spendRateLimitToken } from '../throttle';
import type { PixProvider } from '../../config/api-pix';
import { deliverDirectly, type ProviderEventReader } from './direct-delivery';

export interface WebhookRoutesOptions {
  db: Db;
  temporal: Client;
  taskQueue: string;
  providerName: string;
  /** Which webhook the provider sends: the provider API's token, or API Pix's batch of received Pix. */
  pixProvider: PixProvider;
  /** New tokens a client address may deliver per minute. */
  newTokensPerMinute: number;
  metrics: Metrics;
  /**
   * Reads an event back from the provider so the api can signal its payout itself (D77). Without it
   * every event goes through its provider-event workflow (API Pix: the api holds no mTLS client).
   */
  readEvent?: ProviderEventReader;
}

/**
 * The SPI's endToEndId: E (or D), the payer's institution ISPB (8 digits), yyyyMMddHHmm (12 digits)
 * and 11 letters or digits. Anything else cannot be a Pix, so it never costs a workflow or a read.
 */
const END_TO_END_ID = /^[ED]\d{20}[A-Za-z0-9]{11}$/;

/** Batches are accepted this many Pix at a time: a large one must answer within the institution's timeout. */
const CALLBACK_CONCURRENCY = 8;

/** An API Pix institution may group Pix into one callback; this bounds one call's work. */
const MAX_PIX_PER_CALLBACK = 1000;

export const webhookBodySchema = z.object(
  {
    token: z
      .string({ error: (i) => (i.input === undefined ? 'token is required' : 'token must be a string') })
      .regex(
        /^[A-Za-z0-9._~-]{1,512}$/,
        'token must be 1-512 characters of A-Z, a-z, 0-9, ".", "_", "~", "-"',
      )
      .meta({
        description:
          "The provider's opaque notification token; the event is fetched back from the provider with it",
        examples: ['ntf_7Hq2xK9mPzR4vW1s'],
      }),
  },
  { error: 'request body must be a JSON object' },
);

/**
 * API Pix's callback body (`{webhookUrl}/pix`): the Pix received, possibly several per call. Only
 * each endToEndId is read; the Pix behind it is fetched back from the institution.
 */
export const apiPixWebhookBodySchema = z.object(
  {
    pix: z
      .array(
        z.looseObject({
          endToEndId: z
            .string({ error: 'pix[].endToEndId must be a string' })
            .regex(END_TO_END_ID, 'pix[].endToEndId must be E or D, 20 digits and 11 letters or digits'),
        }),
        { error: 'pix must be an array' },
      )
      .min(1, 'pix must list at least one Pix')
      .max(MAX_PIX_PER_CALLBACK, `pix may list at most ${MAX_PIX_PER_CALLBACK} Pix`),
  },
  { error: 'request body must be a JSON object' },
);

export const webhookAckSchema = z.object({
  received: z.literal(true).meta({ description: 'Always true: the token is recorded (or was already)' }),
});

/**
 * POST /webhooks/{provider}, or POST /webhooks/{provider}/pix for API Pix (docs/decisions.md D20-D21,
 * D46, D77). The answer is 200 once the event is in Temporal's hands and the de-dup row is written.
 * The api first tries to read the event back and signal its payout itself (D77); whatever that cannot
 * settle at once goes to a provider-event workflow (its id is made of provider and token, so a repeat
 * cannot start a second one), which retries, so a provider outage loses nothing.
 *
 * The signal is sent, or the workflow started, before the de-dup row is written, never after: a row
 * therefore always means the event reached Temporal, so a crash between the two steps can only cause
 * a redundant delivery (counted once by the payout, or rejected by Temporal), never a token marked as
 * seen whose event nobody processes. The row, kept at least 90 days, outlives Temporal's retention of
 * closed workflows: it is what keeps a very late redelivery from starting a second workflow once the
 * first one has been purged.
 */
export const webhookRoutes: FastifyPluginAsyncZod<WebhookRoutesOptions> = async (app, opts) => {
  const inFlight: InFlight = new Map();
  // Every outcome's series exists from the start at 0: Prometheus' increase() (the webhook alerts)
  // cannot see the first failure of a series that first appears already at 1.
  for (const outcome of ['received', 'duplicate', 'throttled', 'failed'] as const) {
    opts.metrics.webhooks.inc({ provider: opts.providerName, outcome }, 0);
  }
  opts.metrics.webhooks.inc({ provider: 'unknown', outcome: 'rejected' }, 0);
  const response = {
    200: webhookAckSchema,
    400: errorBodySchema,
    404: errorBodySchema,
    429: errorBodySchema,
  };
  // Before the body is read: a wrong provider name is 404 whatever follows it (bad JSON, wrong
  // content-type, an oversized body), and costs no parsing.
  const knownProviderOnly = async (request: FastifyRequest) => {
    const { provider } = request.params as { provider: string };
    if (provider !== opts.providerName) {
      opts.metrics.webhooks.inc({ provider: 'unknown', outcome: 'rejected' });
      throw API_ERRORS.unknownProvider();
    }
  };

  if (opts.pixProvider === 'provider-api') {
    app.post(
      '/webhooks/:provider',
      {
        schema: {
          summary: 'Payment provider notification',
          params: z.object({ provider: z.string() }),
          body: webhookBodySchema,
          response,
        },
        onRequest: knownProviderOnly,
      },
      async (request) => {
        await acceptEventToken(opts, inFlight, request, request.body.token);
        return { received: true as const };
      },
    );
    return;
  }

  // The institution appends /pix to the registered URL; some do not, so the bare URL takes the same body.
  for (const url of ['/webhooks/:provider/pix', '/webhooks/:provider']) {
    app.post(
      url,
      {
        schema: {
          summary: 'API Pix callback: Pix received',
          description:
            'The institution POSTs to the registered URL with /pix appended. Each endToEndId is read back from the institution before anything is believed.',
          params: z.object({ provider: z.string() }),
          body: apiPixWebhookBodySchema,
          response,
        },
        // A batch of up to MAX_PIX_PER_CALLBACK Pix is larger than any partner request.
        bodyLimit: 1024 * 1024,
        onRequest: knownProviderOnly,
      },
      async (request) => {
        // A throttled batch is answered 429 and sent again whole; the Pix already accepted are then
        // duplicates, never throttled.
        const ids = [...new Set(request.body.pix.map((p) => p.endToEndId))];
        for (let i = 0; i < ids.length; i += CALLBACK_CONCURRENCY) {
          await Promise.all(
            ids.slice(i, i + CALLBACK_CONCURRENCY).map((id) => acceptEventToken(opts, inFlight, request, id)),
          );
        }
        return { received: true as const };
      },
    );
  }
};

/**
 * Deliveries of one token this api is delivering now, by token hash: a provider that sends a token
 * several times at once costs one read and one signal per replica, not one per copy. One map per
 * registration of the routes (an api), never per process: two apps in one process (the tests' replicas)
 * are two replicas, and neither ever answers with the other's database or Temporal client.
 */
type InFlight = Map<string, Promise<void>>;

/**
 * Records one event token (the provider API's notification token, or an API Pix endToEndId) once its
 * event reached its payout, by the api's own signal or by the provider-event workflow it starts,
 * exactly once however often it is delivered.
 *
 * Each delivery is checked, throttled, counted and logged as its own request, as before D77: only
 * the work after the throttle (the read, the signal or the workflow's start, the de-dup row) is shared
 * by the copies that reach this api while a first one is being delivered. A copy therefore never takes
 * another client address's 429, and `webhook_deliveries_total` counts every delivery once (the shared
 * copies as duplicates).
 */
async function acceptEventToken(
  opts: WebhookRoutesOptions,
  inFlight: InFlight,
  request: FastifyRequest,
  token: string,
): Promise<void> {
  const provider = opts.providerName;
  // Only a hash of the token is kept anywhere outside the workflow's input (see provider-event.contract.ts).
  const tokenHash = createHash('sha256').update(token).digest('hex');
  if (await isWebhookTokenRecorded(opts.db, provider, tokenHash)) {
    opts.metrics.webhooks.inc({ provider, outcome: 'duplicate' });
    return;
  }
  // Only a token never seen before can start a workflow, so only those are throttled: a burst
  // of junk tokens from one address cannot start workflows without bound, and the provider's
  // redeliveries of a known token are always acknowledged.
  try {
    await spendRateLimitToken(opts.db, `webhook-new-token:${request.ip}`, opts.newTokensPerMinute);
  } catch (err) {
    opts.metrics.webhooks.inc({ provider, outcome: 'throttled' });
    throw err;
  }
  const running = inFlight.get(tokenHash);
  if (running) {
    // Another copy is being delivered by this api: its outcome is this copy's.
    try {
      await running;
    } catch (err) {
      opts.metrics.webhooks.inc({ provider, outcome: 'failed' });
      throw err;
    }
    opts.metrics.webhooks.inc({ provider, outcome: 'duplicate' });
    request.log.info({ provider, duplicate: true, shared: true }, 'provider webhook accepted');
    return;
  }
  const delivering = deliverAndRecord(opts, request, token, tokenHash).finally(() =>
    inFlight.delete(tokenHash),
  );
  inFlight.set(tokenHash, delivering);
  await delivering;
}

/** The event to its payout (by the api's signal, or its workflow's start), then the de-dup row. */
async function deliverAndRecord(
  opts: WebhookRoutesOptions,
  request: FastifyRequest,
  token: string,
  tokenHash: string,
): Promise<void> {
  const provider = opts.providerName;
  // Asked again now that this copy holds the token's slot: a copy checked before the row was written
  // may reach the slot just after the delivery that wrote it let it go, and must not deliver again.
  if (await isWebhookTokenRecorded(opts.db, provider, tokenHash)) {
    opts.metrics.webhooks.inc({ provider, outcome: 'duplicate' });
    return;
  }
  const direct = opts.readEvent
    ? await deliverDirectly(
        { db: opts.db, temporal: opts.temporal, readEvent: opts.readEvent, log: request.log },
        token,
      )
    : 'not_configured';
  const delivered = typeof direct === 'object';
  let duplicate = false;
  if (!delivered) {
    try {
      await opts.temporal.workflow.start(providerEventWorkflow, {
        workflowId: providerEventWorkflowId(provider, tokenHash),
        taskQueue: opts.taskQueue,
        args: [{ provider, token }],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
        opts.metrics.webhooks.inc({ provider, outcome: 'failed' });
        throw err;
      }
      duplicate = true;
    }
  }
  // Written only once the event is in Temporal's hands (signalled, or its workflow started): a crash
  // before this line costs a redundant delivery, which the payout and the workflow id both absorb,
  // never a token marked as seen whose event nobody processes.
  duplicate = !(await recordWebhookToken(opts.db, provider, tokenHash)) || duplicate;
  opts.metrics.webhooks.inc({ provider, outcome: duplicate ? 'duplicate' : 'received' });
  const path = delivered ? 'signal' : 'workflow';
  if (!duplicate) opts.metrics.webhookEventPaths.inc({ provider, path });
  request.log.info(
    { provider, duplicate, path, ...(delivered ? { payoutId: direct.payoutId } : { why: direct }) },
    'provider webhook accepted',
  );
}
