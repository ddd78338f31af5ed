import { z } from 'zod';
import { PAYOUT_STATUSES } from '../../domain/payout';
import { anyCase, payoutResponseSchema } from './payout.schemas';
import { UUID_PATTERN } from '../../domain/ids';

export const LIST_LIMIT_DEFAULT = 20;
export const LIST_LIMIT_MAX = 100;

const LIMIT_PATTERN = new RegExp(`^(?:[1-9][0-9]?|${LIST_LIMIT_MAX})$`);
const UUID_ANY_CASE = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

const QUERY_PARAMETERS = ['limit', 'starting_after', 'status', 'created_at[gte]', 'created_at[lt]'];

export const STARTING_AFTER_UNKNOWN = 'starting_after must be the id of one of your payouts';

/**
 * A query-string parameter: a single string. Node's query parser turns a repeated parameter into an
 * array, which is refused rather than silently reduced to one of its values.
 */
const param = (name: string) =>
  z.string({
    error: (issue) =>
      Array.isArray(issue.input) ? `${name} must be given once` : `${name} must be a string`,
  });

const isoInstant = z.iso.datetime({ offset: true });

const HOUR = '(?:[01][0-9]|2[0-3])';
const MINUTE = '[0-5][0-9]';
// Each month's days, and 29 February in leap years only (every 4th year, not centuries but every 400th).
const DAY =
  '(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|' +
  '02-(?:0[1-9]|1[0-9]|2[0-8]))|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)';
/**
 * Exactly the texts `timestamp` accepts, for the document: a schema-driven client then never sends
 * one the server refuses (an empty value, 30 February). test/unit/list-query.test.ts holds the two
 * to each other.
 */
export const TIMESTAMP_PATTERN = `^(?:[0-9]{1,11}|${DAY}T${HOUR}:${MINUTE}:${MINUTE}(?:\\.[0-9]+)?(?:Z|[+ -]${HOUR}:${MINUTE}))$`;

const EARLIEST = Date.parse('0001-01-01T00:00:00.000Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * The instant in UTC, as PostgreSQL reads every instant this api takes: it refuses offsets past
 * ±15:59 and years outside 1-9999 in this form, which ISO 8601 allows (a 500, before). No payout
 * was created outside those years, so a bound beyond them is moved to their edge without changing
 * any answer. Digits past the millisecond are kept: PostgreSQL stores microseconds.
 */
function utcInstant(iso: string): string {
  const ms = Date.parse(iso);
  if (ms < EARLIEST) return new Date(EARLIEST).toISOString();
  if (ms > LATEST) return new Date(LATEST).toISOString();
  const beyondMillis = /\.[0-9]{3}([0-9]+)/.exec(iso)?.[1] ?? '';
  return new Date(ms).toISOString().replace(/Z$/, `${beyondMillis}Z`);
}

/**
 * An instant: ISO 8601 with seconds and a time zone (what the api's own timestamps look like), or
 * Unix seconds. A space before a trailing hh:mm offset was a `+` that the client did not
 * percent-encode (query strings decode `+` as a space): it is read as the `+` it was.
 */
const timestamp = (name: string) =>
  param(name)
    .transform((raw, ctx) => {
      if (/^[0-9]{1,11}$/.test(raw)) return utcInstant(new Date(Number(raw) * 1000).toISOString());
      const text = raw.replace(/ ([0-9]{2}:[0-9]{2})$/, '+$1');
      if (isoInstant.safeParse(text).success) return utcInstant(text);
      ctx.addIssue({
        code: 'custom',
        message: `${name} must be an ISO 8601 date-time with a time zone (e.g. 2026-01-31T00:00:00Z) or Unix seconds`,
      });
      return z.NEVER;
    })
    .meta({
      pattern: TIMESTAMP_PATTERN,
      examples: ['2026-01-31T00:00:00Z', '2026-01-31T00:00:00.000-03:00', '1769817600'],
    })
    .optional();

/**
 * Query of GET /v1/payouts. Strict: a misspelt filter (`created_at[lte]`, `state`) is a 400 naming
 * it, never a silently unfiltered list that a reconciliation would take for the filtered one.
 */
export const listPayoutsQuerySchema = z.strictObject(
  {
    // The pattern is the whole rule (1 to 100, written plainly), so the document states it exactly.
    limit: param('limit')
      .regex(LIMIT_PATTERN, `limit must be an integer from 1 to ${LIST_LIMIT_MAX}`)
      .transform(Number)
      .optional(),
    starting_after: param('starting_after')
      .regex(UUID_PATTERN, STARTING_AFTER_UNKNOWN)
      .transform((id) => id.toLowerCase())
      // JSON Schema patterns have no /i flag: the document spells out the any-case UUID.
      .meta({ pattern: UUID_ANY_CASE })
      .optional(),
    status: param('status')
      .transform((value, ctx) => {
        const status = PAYOUT_STATUSES.find((s) => s === value.toUpperCase());
        if (status) return status;
        ctx.addIssue({ code: 'custom', message: `status must be one of ${PAYOUT_STATUSES.join(', ')}` });
        return z.NEVER;
      })
      .meta({ pattern: `^(${PAYOUT_STATUSES.map(anyCase).join('|')})$`, examples: ['COMPLETED'] })
      .optional(),
    'created_at[gte]': timestamp('created_at[gte]'),
    'created_at[lt]': timestamp('created_at[lt]'),
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown query parameter ${issue.keys[0]}; accepted: ${QUERY_PARAMETERS.join(', ')}`
        : undefined,
  },
);

/** A page of payouts, newest first; each item is exactly the Payout of GET /v1/payouts/{id}. */
export const payoutListResponseSchema = z.object({
  data: z.array(payoutResponseSchema),
  has_more: z.boolean(),
});
