import type { Db } from './pool';

/**
 * The provider-mode settlement requests sent, one row per payout (migration settlement-requests-sent):
 * what a run that knows nothing of them (after an operator's reset) reads before it decides anything.
 */
export interface SettlementRequestSent {
  firstSentAt: string;
  /** The provider's id for the settlement, once an answer gave it. */
  settlementId: string | null;
}

/** Recorded right before the request leaves: from here the provider may be settling. Idempotent. */
export async function recordSettlementRequestSent(db: Db, payoutId: string): Promise<void> {
  await db.query(
    'INSERT INTO settlement_requests_sent (payout_id) VALUES ($1) ON CONFLICT (payout_id) DO NOTHING',
    [payoutId],
  );
}

/** The provider's id for it, from an answer. */
export async function recordSettlementAccepted(
  db: Db,
  payoutId: string,
  settlementId: string,
): Promise<void> {
  await db.query(
    `INSERT INTO settlement_requests_sent (payout_id, settlement_id) VALUES ($1, $2)
     ON CONFLICT (payout_id) DO UPDATE SET settlement_id = EXCLUDED.settlement_id`,
    [payoutId, settlementId],
  );
}

export async function findSettlementRequestSent(
  db: Db,
  payoutId: string,
): Promise<SettlementRequestSent | null> {
  const { rows } = await db.query<{ first_sent_at: Date; settlement_id: string | null }>(
    'SELECT first_sent_at, settlement_id FROM settlement_requests_sent WHERE payout_id = $1',
    [payoutId],
  );
  const row = rows[0];
  return row ? { firstSentAt: row.first_sent_at.toISOString(), settlementId: row.settlement_id } : null;
}
