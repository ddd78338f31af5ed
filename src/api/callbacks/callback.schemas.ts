import { z } from 'zod';
import { CALLBACK_EVENTS } from '../../domain/callback-event';
import { MAX_OVERLAP_SECONDS } from '../../domain/rotation';

/** Partner self-service of callbacks (docs/callbacks.md, docs/decisions.md D65). */

export const CALLBACK_TEST_EVENT = 'callback.test';
export const EVENTS_LIMIT_DEFAULT = 20;
export const EVENTS_LIMIT_MAX = 100;
const URL_MAX_LENGTH = 2048;

const instant = (description: string) =>
  z.string().meta({ description, format: 'date-time', examples: ['2026-07-01T12:00:00.000Z'] });

export const setCallbackBodySchema = z.strictObject(
  {
    url: z
      .string({ error: (i) => (i.input === undefined ? 'url is required' : 'url must be a string') })
      .max(URL_MAX_LENGTH, `url must be at most ${URL_MAX_LENGTH} characters`)
      // A pattern the document carries; whether the rest parses is the URL guard's to say (`url refused: ...`).
      .regex(/^https?:\/\/\S+$/, 'url must be an https URL')
      .meta({
        description: 'Where payout events are POSTed: https, on a public address (no credentials in it)',
        examples: ['https://partner.example/pix-payouts/callbacks'],
      }),
  },
  {
    error: (i) =>
      i.code === 'unrecognized_keys' ? `unknown field: ${i.keys[0]}` : 'request body must be a JSON object',
  },
);

/**
 * The body of POST /v1/callback/rotate-secret. It may be left out altogether (no content-type,
 * nothing sent): the route reads that as `{}`, the default overlap.
 */
export const rotateSecretBodySchema = z.strictObject(
  {
    overlap_seconds: z
      .int({ error: `overlap_seconds must be a whole number from 0 to ${MAX_OVERLAP_SECONDS}` })
      .min(0, `overlap_seconds must be a whole number from 0 to ${MAX_OVERLAP_SECONDS}`)
      .max(MAX_OVERLAP_SECONDS, `overlap_seconds must be a whole number from 0 to ${MAX_OVERLAP_SECONDS}`)
      .optional()
      .meta({
        description:
          'How long the replaced secret keeps signing beside the new one (0, the default: it stops at once; at most 30 days)',
        examples: [86_400],
      }),
  },
  {
    error: (i) =>
      i.code === 'unrecognized_keys' ? `unknown field: ${i.keys[0]}` : 'request body must be a JSON object',
  },
);

export const callbackSettingsSchema = z.object({
  url: z.string().nullable().meta({ description: 'The callback URL; null when none is set' }),
  previous_secret_valid_until: instant(
    'While a rotation overlap lasts: when the replaced secret stops signing; else null',
  ).nullable(),
});

export const setCallbackResponseSchema = z.object({
  url: z.string(),
  secret: z.string().optional().meta({
    description:
      'The signing secret (Standard Webhooks, whsec_...), present only when this call created it: shown once',
  }),
});

export const rotatedSecretSchema = z.object({
  secret: z.string().meta({ description: 'The new signing secret (whsec_...): shown once' }),
  previous_secret_valid_until: instant(
    'When the replaced secret stops signing; null when overlap_seconds was 0',
  ).nullable(),
});

export const testEventResultSchema = z.object({
  event_id: z
    .string()
    .meta({ description: 'The webhook-id the test event carried', examples: ['evt_test_3f9c1e7a'] }),
  delivered: z.boolean().meta({ description: 'Whether your endpoint answered 2xx' }),
  status_code: z.int().nullable().meta({ description: 'Your endpoint’s HTTP status; null when none came' }),
  error: z
    .string()
    .nullable()
    .meta({ description: 'Why no answer came (refused URL, DNS, connect, TLS, timeout)' }),
  duration_ms: z.int(),
});

const LIMIT_PATTERN = new RegExp(`^(?:[1-9][0-9]?|${EVENTS_LIMIT_MAX})$`);
/** An event id as the api answers it: evt_<payout id>_completed or evt_<payout id>_failed. */
const EVENT_ID_PATTERN =
  '^evt_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}_(?:completed|failed)$';
export const EVENTS_STARTING_AFTER_UNKNOWN = 'starting_after must be the id of one of your callback events';

/** Query of GET /v1/callback/events: pages as GET /v1/payouts does (`limit`, `starting_after`, `has_more`). */
export const listEventsQuerySchema = z.strictObject(
  {
    limit: z
      .string({ error: 'limit must be given once' })
      .regex(LIMIT_PATTERN, `limit must be a whole number from 1 to ${EVENTS_LIMIT_MAX}`)
      .transform(Number)
      .meta({ description: `Events per page, 1-${EVENTS_LIMIT_MAX} (default ${EVENTS_LIMIT_DEFAULT})` })
      .optional(),
    starting_after: z
      .string({ error: 'starting_after must be given once' })
      .regex(new RegExp(EVENT_ID_PATTERN), EVENTS_STARTING_AFTER_UNKNOWN)
      .meta({
        description: 'The `event_id` of the last event of the previous page: this page starts after it',
        examples: ['evt_3f9c1e7a-8b2d-4c5e-9f0a-1b2c3d4e5f6a_completed'],
      })
      .optional(),
  },
  {
    error: (i) =>
      i.code === 'unrecognized_keys' ? `unknown query parameter: ${i.keys[0]}` : 'invalid query',
  },
);

const attemptSchema = z.object({
  attempt: z.int(),
  started_at: instant('When the attempt started'),
  duration_ms: z.int(),
  url: z.string().meta({ description: 'The URL called, without its query string' }),
  status_code: z.int().nullable(),
  error: z.string().nullable(),
  response_excerpt: z.string().nullable().meta({ description: 'The start of your endpoint’s answer' }),
});

export const callbackEventListSchema = z.object({
  data: z.array(
    z.object({
      event_id: z.string(),
      payout_id: z.string(),
      event: z.enum(CALLBACK_EVENTS),
      state: z.enum(['pending', 'delivered', 'gave_up', 'skipped']).meta({
        description:
          'pending: being retried; delivered: a 2xx was received; gave_up: no 2xx within 24 h; skipped: no callback URL when it was due',
      }),
      attempt_count: z.int(),
      created_at: instant('When the event was created'),
      updated_at: instant('Its last change'),
      attempts: z.array(attemptSchema),
    }),
  ),
  has_more: z.boolean().meta({
    description: 'More (older) events follow: pass the last `event_id` as `starting_after` for them',
  }),
});
