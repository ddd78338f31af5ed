import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { sendCallback, type CallbackSenderOptions } from '../../adapters/callbacks/http-sender';
import { generateCallbackSecret } from '../../adapters/callbacks/signature';
import { CallbackUrlRefused, vetCallbackUrl } from '../../adapters/callbacks/url-guard';
import { callbackEventAnswer, pageCallbackEvents } from '../../adapters/db/callbacks-repo';
import {
  CallbackOverlapActive,
  NoCallbackConfigured,
  rotateCallbackSecret,
} from '../../adapters/db/credential-rotation';
import {
  clearPartnerCallback,
  findPartnerCallback,
  findPartnerCallbackSettings,
  setPartnerCallbackUrl,
} from '../../adapters/db/partners-repo';
import type { Db } from '../../adapters/db/pool';
import type { SecretBox } from '../../adapters/secrets/secret-box';
import { partnerOf, type Authenticate } from '../auth';
import { API_ERRORS } from '../errors';
import { errorBodySchema } from '../payouts/payout.schemas';
import { CALLBACK_BUCKET } from '../rate-limit';
import {
  CALLBACK_TEST_EVENT,
  callbackEventListSchema,
  callbackSettingsSchema,
  EVENTS_LIMIT_DEFAULT,
  listEventsQuerySchema,
  rotatedSecretSchema,
  rotateSecretBodySchema,
  setCallbackBodySchema,
  setCallbackResponseSchema,
  testEventResultSchema,
} from './callback.schemas';

/** What the api needs to let partners manage their callbacks: the worker's sending rules and the secrets' box. */
export interface PartnerCallbacks {
  sender: CallbackSenderOptions;
  secrets: SecretBox;
}

export interface CallbackRoutesOptions extends PartnerCallbacks {
  db: Db;
  /** CALLBACK_RATE_LIMIT_PER_MINUTE: the routes' own bucket, per partner (docs/decisions.md D68). */
  rateLimitPerMinute: number;
  authenticate: Authenticate;
}

/** Every answer of these routes; the status codes each one may add are listed per route. */
const COMMON = { 400: errorBodySchema, 401: errorBodySchema, 429: errorBodySchema } as const;

type CallbackChange = 'set' | 'delete' | 'rotate-secret';

/**
 * The audit line of a change to a partner's callback: who, what, where to (the URL's host only:
 * partners put their own tokens in paths and query strings), and the request's id (`reqId`, bound
 * to every line of the request). Never a secret.
 */
function audit(request: FastifyRequest, action: CallbackChange, url: string | null): void {
  const host = url !== null && URL.canParse(url) ? new URL(url).host : null;
  request.log.info(
    { audit: 'partner_callback', partnerId: partnerOf(request).id, action, host, requestId: request.id },
    `partner callback ${action}`,
  );
}

/**
 * /v1/callback: a partner's own callback endpoint, managed with its API key (docs/callbacks.md,
 * docs/decisions.md D65), by the rules the operator's CLI applies (src/cli/partner-commands.ts): the
 * same URL guard, the same rotation with overlap, the same delivery log. Everything is keyed by the
 * authenticated partner: no route takes a partner id, so none can reach another's.
 */
export const callbackRoutes: FastifyPluginAsyncZod<CallbackRoutesOptions> = async (app, opts) => {
  // One bucket for every route here, per partner, spending neither the payout nor the read bucket:
  // a test event makes this api connect out, which must not be cheap in bulk (D68).
  const spends = opts.authenticate.spending(CALLBACK_BUCKET, opts.rateLimitPerMinute, 'partner');
  /** An authenticated partner is a row: its absence is a bug, not a partner's mistake. */
  const present = <T>(value: T | null | false): T => {
    if (value === null || value === false) throw new Error('authenticated partner not found');
    return value;
  };

  app.get(
    '/v1/callback',
    {
      onRequest: spends,
      schema: { summary: 'Read your callback URL', response: { 200: callbackSettingsSchema, ...COMMON } },
    },
    async (request) => {
      const settings = present(await findPartnerCallbackSettings(opts.db, partnerOf(request).id));
      return { url: settings.url, previous_secret_valid_until: settings.previousSecretValidUntil };
    },
  );

  app.put(
    '/v1/callback',
    {
      onRequest: spends,
      schema: {
        summary: 'Set your callback URL',
        body: setCallbackBodySchema,
        response: { 200: setCallbackResponseSchema, ...COMMON, 503: errorBodySchema },
      },
    },
    async (request) => {
      const { url } = request.body;
      // The send-time guard, applied up front. A name that does not resolve yet is accepted (DNS
      // may still be on its way): every send resolves and checks it again. What the guard found
      // goes to the log; the partner gets the refusal's fixed text (D69).
      await vetCallbackUrl(url, opts.sender, opts.sender.resolve).catch((err: unknown) => {
        if (!(err instanceof CallbackUrlRefused)) throw err;
        const host = URL.canParse(url) ? new URL(url).host : null;
        request.log.info(
          { partnerId: partnerOf(request).id, host, refusal: err.message, detail: err.detail },
          err.unresolvable
            ? 'partner callback url accepted before its host resolves'
            : 'partner callback url refused',
        );
        if (err.unresolvable) return;
        throw err.temporary
          ? API_ERRORS.callbackUrlUnresolvedNow()
          : API_ERRORS.callbackUrlRefused(err.message);
      });
      const secret = generateCallbackSecret();
      const set = present(
        await setPartnerCallbackUrl(opts.db, partnerOf(request).id, url, secret, opts.secrets),
      );
      audit(request, 'set', url);
      return { url, ...(set.issued ? { secret } : {}) };
    },
  );

  app.delete(
    '/v1/callback',
    {
      onRequest: spends,
      schema: {
        summary: 'Stop callbacks (removes the URL and its secret)',
        response: { 200: callbackSettingsSchema, ...COMMON },
      },
    },
    async (request) => {
      const cleared = present(await clearPartnerCallback(opts.db, partnerOf(request).id));
      audit(request, 'delete', cleared.previousUrl);
      return { url: null, previous_secret_valid_until: null };
    },
  );

  app.post(
    '/v1/callback/rotate-secret',
    {
      onRequest: spends,
      // No body at all (no content-type, nothing sent) is `{}`: the default overlap. A body that
      // was sent is validated as it came (`null` included).
      preValidation: async (request) => {
        if (request.body === undefined || (request.body === null && !request.headers['content-type']))
          request.body = {};
      },
      schema: {
        summary: 'Rotate your callback signing secret, with an overlap',
        body: rotateSecretBodySchema,
        response: { 200: rotatedSecretSchema, ...COMMON, 409: errorBodySchema },
      },
    },
    async (request) => {
      const overlap = request.body.overlap_seconds ?? 0;
      const rotation = await rotateCallbackSecret(
        opts.db,
        partnerOf(request).id,
        generateCallbackSecret(),
        overlap,
        opts.secrets,
      ).catch((err: unknown) => {
        if (err instanceof NoCallbackConfigured) throw API_ERRORS.noCallbackConfigured();
        if (err instanceof CallbackOverlapActive) throw API_ERRORS.callbackOverlapActive(err.until);
        throw err;
      });
      const { issued, previousValidUntil, url } = present(rotation);
      audit(request, 'rotate-secret', url);
      return { secret: issued, previous_secret_valid_until: previousValidUntil };
    },
  );

  app.post(
    '/v1/callback/test',
    {
      onRequest: spends,
      schema: {
        summary: 'Send yourself a signed test event',
        response: { 200: testEventResultSchema, ...COMMON, 409: errorBodySchema },
      },
    },
    async (request) => {
      const partnerId = partnerOf(request).id;
      const target = await findPartnerCallback(opts.db, partnerId, opts.secrets);
      if (!target) throw API_ERRORS.noCallbackConfigured();
      const eventId = `evt_test_${randomUUID()}`;
      const body = JSON.stringify({ event: CALLBACK_TEST_EVENT, created_at: new Date().toISOString() });
      // One attempt, answered here: a test is for the partner watching it, not for retries.
      const sent = await sendCallback({ ...target, eventId, body }, opts.sender);
      if (sent.errorDetail !== undefined)
        request.log.info(
          { partnerId, eventId, error: sent.error, detail: sent.errorDetail },
          'partner test callback refused',
        );
      return {
        event_id: eventId,
        delivered: sent.delivered,
        status_code: sent.statusCode ?? null,
        error: sent.error ?? null,
        duration_ms: sent.durationMs,
      };
    },
  );

  app.get(
    '/v1/callback/events',
    {
      onRequest: spends,
      schema: {
        summary: 'List your recent callback events with every delivery attempt',
        querystring: listEventsQuerySchema,
        response: { 200: callbackEventListSchema, ...COMMON },
      },
    },
    async (request) => {
      const page = await pageCallbackEvents(opts.db, partnerOf(request).id, {
        limit: request.query.limit ?? EVENTS_LIMIT_DEFAULT,
        ...(request.query.starting_after === undefined
          ? {}
          : { startingAfter: request.query.starting_after }),
      });
      if (!page) throw API_ERRORS.callbackEventsStartingAfterUnknown();
      return { data: page.events.map(callbackEventAnswer), has_more: page.hasMore };
    },
  );
};
