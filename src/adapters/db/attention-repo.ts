import type { Db } from './pool';

import { ATTENTION_KINDS, type AttentionKind } from '../../domain/attention';

/**
 * What a payout waits on without proof (docs/decisions.md, "an unknown is never a verdict"): raised
 * by its workflow when an answer is overdue, cleared by it when proof arrives or an operator decides.
 * Open rows are the PayoutOutcomeUnknown alert; each names its payout.
 */
export { ATTENTION_KINDS, REVIEW_KINDS, WAITING_KINDS, type AttentionKind } from '../../domain/attention';

export interface AttentionItem {
  id: string;
  payoutId: string;
  kind: AttentionKind;
  detail: string;
  raisedAt: string;
}

/** Opens the item unless one of this kind is open for the payout; true when it opened one. */
export async function raiseAttention(
  db: Db,
  a: { payoutId: string; kind: AttentionKind; detail: string },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO payout_attention (payout_id, kind, detail) VALUES ($1, $2, $3)
     ON CONFLICT (payout_id, kind) WHERE cleared_at IS NULL DO NOTHING`,
    [a.payoutId, a.kind, a.detail],
  );
  return rowCount === 1;
}

/**
 * Opens the item, or adds this detail to the payout's open item of its kind unless it already says
 * it: one review item that several findings share (every transaction reported after the payout
 * ended). True when it opened one, false when it extended one or had it already. Takes a client in
 * a transaction too, so the item is written with what it reports.
 */
export async function raiseOrExtendAttention(
  db: Pick<Db, 'query'>,
  a: { payoutId: string; kind: AttentionKind; detail: string },
): Promise<boolean> {
  const { rows } = await db.query<{ opened: boolean }>(
    `INSERT INTO payout_attention (payout_id, kind, detail) VALUES ($1, $2, $3)
     ON CONFLICT (payout_id, kind) WHERE cleared_at IS NULL
     DO UPDATE SET detail = payout_attention.detail || '; ' || EXCLUDED.detail
      WHERE strpos(payout_attention.detail, EXCLUDED.detail) = 0
     RETURNING (xmax = 0) AS opened`,
    [a.payoutId, a.kind, a.detail],
  );
  return rows[0]?.opened ?? false;
}

/** Closes the payout's open items of these kinds (all when none given); by whom, for the record. */
export async function clearAttention(
  db: Db,
  a: { payoutId: string; kinds?: readonly AttentionKind[]; by: string },
): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE payout_attention SET cleared_at = now(), cleared_by = $3
      WHERE payout_id = $1 AND cleared_at IS NULL AND ($2::text[] IS NULL OR kind = ANY($2))`,
    [a.payoutId, a.kinds ?? null, a.by],
  );
  return rowCount ?? 0;
}

export async function listOpenAttention(db: Db, opts: { payoutId?: string } = {}): Promise<AttentionItem[]> {
  const { rows } = await db.query<{
    id: string;
    payout_id: string;
    kind: AttentionKind;
    detail: string;
    raised_at: Date;
  }>(
    `SELECT id::text, payout_id, kind, detail, raised_at FROM payout_attention
      WHERE cleared_at IS NULL AND ($1::uuid IS NULL OR payout_id = $1) ORDER BY raised_at, id`,
    [opts.payoutId ?? null],
  );
  return rows.map((r) => ({
    id: r.id,
    payoutId: r.payout_id,
    kind: r.kind,
    detail: r.detail,
    raisedAt: r.raised_at.toISOString(),
  }));
}

/** Open items by kind, every kind present (0 included) so the gauge's series exist from the start. */
export async function countOpenAttention(db: Db): Promise<Record<AttentionKind, number>> {
  const { rows } = await db.query<{ kind: AttentionKind; n: string }>(
    'SELECT kind, count(*)::text AS n FROM payout_attention WHERE cleared_at IS NULL GROUP BY kind',
  );
  const counts = Object.fromEntries(ATTENTION_KINDS.map((k) => [k, 0])) as Record<AttentionKind, number>;
  for (const r of rows) counts[r.kind] = Number(r.n);
  return counts;
}

export interface OperatorDecision {
  payoutId: string;
  decision: 'fail' | 'complete' | 'refund' | 'release';
  decidedBy: string;
  reason: string;
  txHash?: string;
  amountUsdtUnits?: string;
}

/** Records the decision a payout's workflow accepted; a repeat (an activity retry) keeps the first. */
export async function recordOperatorDecision(db: Db, d: OperatorDecision): Promise<void> {
  await db.query(
    `INSERT INTO operator_decisions (payout_id, decision, decided_by, reason, tx_hash, amount_usdt_units)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (payout_id, decision) DO NOTHING`,
    [d.payoutId, d.decision, d.decidedBy, d.reason, d.txHash ?? null, d.amountUsdtUnits ?? null],
  );
}
