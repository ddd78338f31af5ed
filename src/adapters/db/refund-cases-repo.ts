import type { Db } from './pool';

/**
 * Refund cases: BRL that reached the provider for one of our payouts and will not be settled (a
 * wrong amount, a second payment, a payment after the payout ended, or a paid payout that ended
 * FAILED). One case per payment (its provider event id). Each case's refund workflow moves it from
 * `open` to `returning` (or `awaiting_approval` first) to `returned` or `refused`; an operator may
 * also resolve a case by hand. Every change is kept with its time (refund_case_changes).
 */
export const REFUND_CASE_STATUSES = [
  'open',
  'awaiting_approval',
  'returning',
  'returned',
  'refused',
  'resolved',
] as const;
export type RefundCaseStatus = (typeof REFUND_CASE_STATUSES)[number];

/** Where no money is on its way: the states an operator may resolve by hand. */
export const RESOLVABLE_BY_HAND: readonly RefundCaseStatus[] = ['open', 'awaiting_approval', 'refused'];

export interface RefundCaseChange {
  status: RefundCaseStatus;
  at: string;
  detail: string | null;
}

export interface RefundCase {
  id: string;
  eventId: string;
  payoutId: string;
  chargeId: string;
  amountBrl: string;
  reason: string;
  /** The refund kind the policy decides by; null for cases opened before it was kept. */
  kind: string | null;
  status: RefundCaseStatus;
  /** The provider's id of the return, once it answered the request. */
  returnId: string | null;
  refusalReason: string | null;
  approvedBy: string | null;
  createdAt: string;
  statusChangedAt: string;
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
  kind: string | null;
  status: RefundCaseStatus;
  return_id: string | null;
  refusal_reason: string | null;
  approved_by: string | null;
  created_at: Date;
  status_changed_at: Date;
  resolved_at: Date | null;
  resolution_note: string | null;
}

const COLUMNS =
  'id, event_id, payout_id, charge_id, amount_brl, reason, kind, status, return_id, refusal_reason, ' +
  'approved_by, created_at, status_changed_at, resolved_at, resolution_note';

function toCase(row: RefundCaseRow): RefundCase {
  return {
    id: row.id,
    eventId: row.event_id,
    payoutId: row.payout_id,
    chargeId: row.charge_id,
    amountBrl: row.amount_brl,
    reason: row.reason,
    kind: row.kind,
    status: row.status,
    returnId: row.return_id,
    refusalReason: row.refusal_reason,
    approvedBy: row.approved_by,
    createdAt: row.created_at.toISOString(),
    statusChangedAt: row.status_changed_at.toISOString(),
    resolvedAt: row.resolved_at?.toISOString() ?? null,
    resolutionNote: row.resolution_note,
  };
}

export type OpenRefundCaseResult =
  { outcome: 'opened' | 'already_open'; caseId: string } | { outcome: 'payment_settles_its_payout' };

/**
 * Opens the case for a payment, once per provider event id. A payment that is the one a COMPLETED
 * payout settled is not refundable (a redelivery of its event under a new token looks like a payment
 * after the end): nothing is opened for it. Only COMPLETED counts: a live payout's payment_event_id
 * may have been written by a local activity of a workflow task that was then redone and chose
 * another payment, and the payment of a FAILED payout is refunded.
 */
export async function openRefundCase(
  db: Db,
  c: { eventId: string; payoutId: string; chargeId: string; amountBrl: string; reason: string; kind: string },
): Promise<OpenRefundCaseResult> {
  const { rows } = await db.query<{ id: string }>(
    `WITH opened AS (
       INSERT INTO refund_cases (event_id, payout_id, charge_id, amount_brl, reason, kind)
       SELECT $1, $2, $3, $4, $5, $6
        WHERE NOT EXISTS (SELECT 1 FROM payouts WHERE payment_event_id = $1 AND status = 'COMPLETED')
       ON CONFLICT (event_id) DO NOTHING
       RETURNING id, created_at)
     INSERT INTO refund_case_changes (case_id, status, changed_at, detail)
     SELECT id, 'open', created_at, $5 FROM opened RETURNING case_id AS id`,
    [c.eventId, c.payoutId, c.chargeId, c.amountBrl, c.reason, c.kind],
  );
  if (rows[0]) return { outcome: 'opened', caseId: rows[0].id };
  const existing = await db.query<{ id: string }>('SELECT id FROM refund_cases WHERE event_id = $1', [
    c.eventId,
  ]);
  return existing.rows[0]
    ? { outcome: 'already_open', caseId: existing.rows[0].id }
    : { outcome: 'payment_settles_its_payout' };
}

/**
 * The COMPLETED payout this payment settled, or null: a refund case for it (opened by a run before an
 * operator's reset, whose new run completed with the same payment) has nothing to return.
 */
export async function payoutSettledByPayment(db: Db, eventId: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>(
    "SELECT id FROM payouts WHERE payment_event_id = $1 AND status = 'COMPLETED' LIMIT 1",
    [eventId],
  );
  return rows[0]?.id ?? null;
}

/** Unfinished cases (not returned, not resolved) oldest first, or every case with `all`. */
export async function listRefundCases(
  db: Db,
  opts: { all?: boolean; limit?: number } = {},
): Promise<(RefundCase & { changes: RefundCaseChange[] })[]> {
  const { rows } = await db.query<RefundCaseRow>(
    `SELECT ${COLUMNS} FROM refund_cases
      ${opts.all ? '' : "WHERE status NOT IN ('returned', 'resolved')"}
     ORDER BY created_at, event_id LIMIT $1`,
    [opts.limit ?? 500],
  );
  const changes = await db.query<{
    case_id: string;
    status: RefundCaseStatus;
    changed_at: Date;
    detail: string | null;
  }>(
    `SELECT case_id, status, changed_at, detail FROM refund_case_changes
      WHERE case_id = ANY($1::uuid[]) ORDER BY changed_at, status`,
    [rows.map((r) => r.id)],
  );
  return rows.map((row) => ({
    ...toCase(row),
    changes: changes.rows
      .filter((c) => c.case_id === row.id)
      .map((c) => ({ status: c.status, at: c.changed_at.toISOString(), detail: c.detail })),
  }));
}

export async function findRefundCase(db: Db, id: string): Promise<RefundCase | null> {
  const { rows } = await db.query<RefundCaseRow>(`SELECT ${COLUMNS} FROM refund_cases WHERE id = $1`, [id]);
  return rows[0] ? toCase(rows[0]) : null;
}

/**
 * Moves a case from one of `from` to `to`, with the fields of the new status, and records the change.
 * A case in any other status is left as it is (a redone activity, or an operator who got there
 * first): the caller gets the case as it is now and `moved` says which happened. Null: no such case.
 * A case is never moved to `returning` (claimed for a return) while its payout has a settlement
 * report after its end on record (settlements_after_end): USDT may have left for it, and the case
 * stays where it is for an operator. Nor while its payment is the one a COMPLETED payout settled (a
 * case opened by a run before an operator's reset, whose new run completed with that payment): the
 * payer got the USDT. Checked in the same statement as the claim.
 */
export async function moveRefundCase(
  db: Db,
  id: string,
  move: {
    from: readonly RefundCaseStatus[];
    to: RefundCaseStatus;
    detail?: string;
    returnId?: string;
    refusalReason?: string;
    approvedBy?: string;
    resolutionNote?: string;
  },
): Promise<{ moved: boolean; refundCase: RefundCase } | null> {
  const { rows } = await db.query<RefundCaseRow>(
    `WITH moved AS (
       UPDATE refund_cases
          SET status = $3, status_changed_at = now(),
              return_id = COALESCE($4, return_id),
              refusal_reason = COALESCE($5, refusal_reason),
              approved_by = COALESCE($6, approved_by),
              resolved_at = CASE WHEN $3 = 'resolved' THEN now() END,
              resolution_note = CASE WHEN $3 = 'resolved' THEN $7 END
        WHERE id = $1 AND status = ANY($2::text[])
          AND ($3 <> 'returning' OR (
                NOT EXISTS (SELECT 1 FROM settlements_after_end s WHERE s.payout_id = refund_cases.payout_id)
                AND NOT EXISTS (SELECT 1 FROM payouts p
                                 WHERE p.payment_event_id = refund_cases.event_id AND p.status = 'COMPLETED')))
        RETURNING ${COLUMNS}),
     changed AS (
       INSERT INTO refund_case_changes (case_id, status, changed_at, detail)
       SELECT id, status, status_changed_at, $8 FROM moved)
     SELECT * FROM moved`,
    [
      id,
      move.from,
      move.to,
      move.returnId ?? null,
      move.refusalReason ?? null,
      move.approvedBy ?? null,
      move.resolutionNote ?? null,
      move.detail ?? move.resolutionNote ?? move.refusalReason ?? null,
    ],
  );
  if (rows[0]) return { moved: true, refundCase: toCase(rows[0]) };
  const current = await findRefundCase(db, id);
  return current === null ? null : { moved: false, refundCase: current };
}

/**
 * Marks a case resolved by hand with the operator's note, where no money is on its way (open,
 * awaiting approval, refused). Null when no case has this id; a case in any other status is returned
 * as it is (a resolved one keeps its first resolution, so a repeated command is harmless).
 */
export async function resolveRefundCase(db: Db, id: string, note: string): Promise<RefundCase | null> {
  const result = await moveRefundCase(db, id, {
    from: RESOLVABLE_BY_HAND,
    to: 'resolved',
    resolutionNote: note,
  });
  return result?.refundCase ?? null;
}

/** The provider's id of the case's return, once it answered; not a status change. */
export async function setRefundReturnId(db: Db, id: string, returnId: string): Promise<void> {
  await db.query('UPDATE refund_cases SET return_id = $2 WHERE id = $1', [id, returnId]);
}

/** Per status: how many cases, and how long the oldest has been in it (the refund gauges). */
export async function refundCaseAges(
  db: Db,
): Promise<{ status: RefundCaseStatus; count: number; oldestSeconds: number }[]> {
  const { rows } = await db.query<{ status: RefundCaseStatus; n: string; oldest: string }>(
    `SELECT status, count(*)::text AS n,
            COALESCE(EXTRACT(EPOCH FROM now() - min(status_changed_at)), 0)::text AS oldest
       FROM refund_cases GROUP BY status`,
  );
  return rows.map((r) => ({ status: r.status, count: Number(r.n), oldestSeconds: Number(r.oldest) }));
}
