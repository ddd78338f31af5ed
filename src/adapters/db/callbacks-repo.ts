import type { CallbackEvent } from '../../domain/callback-event';
import type { Db } from './pool';

/**
 * The operator's view of partner callbacks: one row per event (its current state) and one per HTTP
 * attempt. Written by the delivery activities, read by the admin CLI (`partner deliveries`).
 */
export type CallbackEventState = 'pending' | 'delivered' | 'gave_up' | 'skipped';

export interface CallbackEventRef {
  eventId: string;
  partnerId: string;
  payoutId: string;
  event: CallbackEvent;
}

export interface CallbackAttemptRecord extends CallbackEventRef {
  attempt: number;
  url: string;
  delivered: boolean;
  statusCode?: number;
  error?: string;
  responseExcerpt?: string;
  startedAt: Date;
  durationMs: number;
}

export interface CallbackDeliveryAttempt {
  attempt: number;
  url: string;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  startedAt: string;
  durationMs: number;
}

export interface CallbackEventView extends CallbackEventRef {
  state: CallbackEventState;
  attemptCount: number;
  createdAt: string;
  updatedAt: string;
  attempts: CallbackDeliveryAttempt[];
}

const INSERT_EVENT = `INSERT INTO callback_events (event_id, partner_id, payout_id, event, state)
  VALUES ($1, $2, $3, $4, $5) ON CONFLICT (event_id) DO NOTHING`;

/** Appends one attempt and moves the event to delivered on a 2xx, atomically. */
export async function recordCallbackAttempt(db: Db, a: CallbackAttemptRecord): Promise<void> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    await client.query(INSERT_EVENT, [a.eventId, a.partnerId, a.payoutId, a.event, 'pending']);
    await client.query(
      `INSERT INTO callback_deliveries
         (event_id, attempt, url, status_code, error, response_excerpt, started_at, duration_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        a.eventId,
        a.attempt,
        a.url,
        a.statusCode ?? null,
        a.error ?? null,
        a.responseExcerpt ?? null,
        a.startedAt,
        a.durationMs,
      ],
    );
    await client.query(
      `UPDATE callback_events
          SET attempts = attempts + 1,
              state = CASE WHEN $2 THEN 'delivered' ELSE state END,
              updated_at = now()
        WHERE event_id = $1`,
      [a.eventId, a.delivered],
    );
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/** Ends an event without a delivery: no callback configured, or retries exhausted. */
export async function closeCallbackEvent(
  db: Db,
  ref: CallbackEventRef,
  state: Extract<CallbackEventState, 'gave_up' | 'skipped'>,
): Promise<void> {
  await db.query(
    `INSERT INTO callback_events (event_id, partner_id, payout_id, event, state)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (event_id) DO UPDATE SET state = EXCLUDED.state, updated_at = now()
       WHERE callback_events.state <> 'delivered'`,
    [ref.eventId, ref.partnerId, ref.payoutId, ref.event, state],
  );
}

export interface CallbackEventPage {
  events: CallbackEventView[];
  /** More events follow the last of this page (older ones). */
  hasMore: boolean;
}

/**
 * The partner's callback events, newest first (by created_at, then event_id), each with all its
 * attempts, one page at a time: `startingAfter` is the last event id of the previous page, a
 * position in that order, as GET /v1/payouts pages. Null when `startingAfter` is not one of the
 * partner's events.
 */
export async function pageCallbackEvents(
  db: Db,
  partnerId: string,
  page: { limit: number; startingAfter?: string },
): Promise<CallbackEventPage | null> {
  const params: unknown[] = [partnerId, page.limit + 1];
  let after = '';
  if (page.startingAfter !== undefined) {
    const { rowCount } = await db.query(
      'SELECT 1 FROM callback_events WHERE event_id = $1 AND partner_id = $2',
      [page.startingAfter, partnerId],
    );
    // Events are never deleted, so a cursor found here is still there for the query below.
    if (rowCount === 0) return null;
    params.push(page.startingAfter);
    after = `AND (created_at, event_id) <
      (SELECT created_at, event_id FROM callback_events WHERE event_id = $3 AND partner_id = $1)`;
  }
  // One row past the page tells whether another page exists, without a count.
  const { rows } = await db.query<{
    event_id: string;
    partner_id: string;
    payout_id: string;
    event: CallbackEvent;
    state: CallbackEventState;
    attempts: number;
    created_at: Date;
    updated_at: Date;
  }>(
    `SELECT event_id, partner_id, payout_id, event, state, attempts, created_at, updated_at
       FROM callback_events WHERE partner_id = $1 ${after}
      ORDER BY created_at DESC, event_id DESC LIMIT $2`,
    params,
  );
  const events = rows.slice(0, page.limit);
  const hasMore = rows.length > page.limit;
  if (events.length === 0) return { events: [], hasMore };
  const { rows: attempts } = await db.query<{
    event_id: string;
    attempt: number;
    url: string;
    status_code: number | null;
    error: string | null;
    response_excerpt: string | null;
    started_at: Date;
    duration_ms: number;
  }>(
    `SELECT event_id, attempt, url, status_code, error, response_excerpt, started_at, duration_ms
       FROM callback_deliveries WHERE event_id = ANY($1) ORDER BY id`,
    [events.map((e) => e.event_id)],
  );
  const views = events.map((e) => ({
    eventId: e.event_id,
    partnerId: e.partner_id,
    payoutId: e.payout_id,
    event: e.event,
    state: e.state,
    attemptCount: e.attempts,
    createdAt: e.created_at.toISOString(),
    updatedAt: e.updated_at.toISOString(),
    attempts: attempts
      .filter((a) => a.event_id === e.event_id)
      .map((a) => ({
        attempt: a.attempt,
        url: a.url,
        statusCode: a.status_code,
        error: a.error,
        responseExcerpt: a.response_excerpt,
        startedAt: a.started_at.toISOString(),
        durationMs: a.duration_ms,
      })),
  }));
  return { events: views, hasMore };
}

/** The partner's `limit` most recent callback events, newest first, each with all its attempts. */
export async function listCallbackEvents(
  db: Db,
  partnerId: string,
  limit = 50,
): Promise<CallbackEventView[]> {
  return (await pageCallbackEvents(db, partnerId, { limit }))?.events ?? [];
}

/** An event with its attempts as partners (GET /v1/callback/events) and operators (admin CLI) read it. */
export function callbackEventAnswer(e: CallbackEventView) {
  return {
    event_id: e.eventId,
    payout_id: e.payoutId,
    event: e.event,
    state: e.state,
    attempt_count: e.attemptCount,
    created_at: e.createdAt,
    updated_at: e.updatedAt,
    attempts: e.attempts.map((a) => ({
      attempt: a.attempt,
      started_at: a.startedAt,
      duration_ms: a.durationMs,
      url: a.url,
      status_code: a.statusCode,
      error: a.error,
      response_excerpt: a.responseExcerpt,
    })),
  };
}
