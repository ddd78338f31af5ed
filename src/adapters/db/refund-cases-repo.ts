import type { Db } from './pool';

/**
 * Refund cases: BRL that reached the provider for one of our payouts and will not be settled (a
 * wrong amount, a second payment, a payment after the payout ended, or a paid payout that ended
 * FAILED). One case per payment (its provider event id); operators refund it and resolve the case.
 */
export interface RefundCase {
  id: string;
  eventId: string;
  payoutId: string;
  chargeId: string;
  amountBrl: string;
  reason: string;
  status: 'open' | 'resolved';
  createdAt: string;
  resolvedAt: string | null;
  resolutionNote: string | null;
}

interface RefundCaseRow {
  id: string;
  event_id: string;
  payout_id: string;
  charge_id: string;
  amount_brl: string;
  reason: string;
  status: 'open' | 'resolved';
  created_at: Date;
  resolved_at: Date | null;
  resolution_note: string | null;
}

const COLUMNS =
  'id, event_id, payout_id, charge_id, amount_brl, reason, status, created_at, resolved_at, resolution_note';

function toCase(row: RefundCaseRow): RefundCase {
  return {
    id: row.id,
    eventId: row.event_id,
    payoutId: row.payout_id,
    chargeId: row.charge_id,
    amountBrl: row.amount_brl,
    reason: row.reason,
    status: row.status,
    createdAt: row.created_at.toISOString(),
    resolvedAt: row.resolved_at?.toISOString() ?? null,
    resolutionNote: row.resolution_note,
  };
}

export type OpenRefundCaseResult = 'opened' | 'already_open' | 'payment_settles_its_payout';

/**
 * Opens the case for a payment, once per provider event id. A payment that is the one a COMPLETED
 * payout settled is not refundable (a redelivery of its event under a new token looks like a payment
 * after the end): nothing is opened for it. Only COMPLETED counts: a live payout's payment_event_id
 * may have been written by a local activity of a workflow task that was then redone and chose
 * another payment, and the payment of a FAILED payout is refunded.
 */
export async function openRefundCase(
  db: Db,
  c: { eventId: string; payoutId: string; chargeId: string; amountBrl: string; reason: string },
): Promise<OpenRefundCaseResult> {
  const { rowCount } = await db.query(
    `INSERT INTO refund_cases (event_id, payout_id, charge_id, amount_brl, reason)
     SELECT $1, $2, $3, $4, $5
      WHERE NOT EXISTS (SELECT 1 FROM payouts WHERE payment_event_id = $1 AND status = 'COMPLETED')
     ON CONFLICT (event_id) DO NOTHING`,
    [c.eventId, c.payoutId, c.chargeId, c.amountBrl, c.reason],
  );
  if (rowCount === 1) return 'opened';
  const { rowCount: existing } = await db.query('SELECT 1 FROM refund_cases WHERE event_id = $1', [
    c.eventId,
  ]);
  return existing === 1 ? 'already_open' : 'payment_settles_its_payout';
}

/** Open cases oldest first (the order to work them in), or every case with `all`. */
export async function listRefundCases(
  db: Db,
  opts: { all?: boolean; limit?: number } = {},
): Promise<RefundCase[]> {
  const { rows } = await db.query<RefundCaseRow>(
    `SELECT ${COLUMNS} FROM refund_cases ${opts.all ? '' : "WHERE status = 'open'"}
     ORDER BY created_at, event_id LIMIT $1`,
    [opts.limit ?? 500],
  );
  return rows.map(toCase);
}

export async function findRefundCase(db: Db, id: string): Promise<RefundCase | null> {
  const { rows } = await db.query<RefundCaseRow>(`SELECT ${COLUMNS} FROM refund_cases WHERE id = $1`, [id]);
  return rows[0] ? toCase(rows[0]) : null;
}

/**
 * Marks an open case resolved with the operator's note. Null when no case has this id; a case
 * already resolved keeps its first resolution (returned as it is) so a repeated command is harmless.
 */
export async function resolveRefundCase(db: Db, id: string, note: string): Promise<RefundCase | null> {
  const { rows } = await db.query<RefundCaseRow>(
    `UPDATE refund_cases SET status = 'resolved', resolved_at = now(), resolution_note = $2
      WHERE id = $1 AND status = 'open' RETURNING ${COLUMNS}`,
    [id, note],
  );
  if (rows[0]) return toCase(rows[0]);
  return findRefundCase(db, id);
}
