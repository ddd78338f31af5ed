import type { Db } from './pool';

export type ClaimOutcome =
  /** The payout holds the claim on this log (just taken, or taken by an earlier attempt). */
  | { claimed: true; logIndex: number }
  /** Every candidate log is claimed, by these other payouts. */
  | { claimed: false; heldBy: string[] };

/**
 * Claims, for the payout, one of the transaction's Transfer logs that match it (`logIndexes`): one
 * transaction may pay several payouts the same (receiver, amount), e.g. a batched payout, and each
 * of those payouts takes its own log. A payout that already holds one of them gets that one back
 * (an activity retry). Per-transaction advisory lock: two attempts of one payout running at once
 * must not each take a log.
 */
export async function claimOneOf(
  db: Db,
  transfer: { chainId: number; txHash: string; logIndexes: number[] },
  payoutId: string,
): Promise<ClaimOutcome> {
  const txHash = transfer.txHash.toLowerCase();
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, $2))', [txHash, transfer.chainId]);
    const { rows: held } = await client.query<{ log_index: number; payout_id: string }>(
      `SELECT log_index, payout_id FROM settlement_transfer_claims
        WHERE chain_id = $1 AND tx_hash = $2 AND log_index = ANY($3::int[])`,
      [transfer.chainId, txHash, transfer.logIndexes],
    );
    const own = held.find((h) => h.payout_id === payoutId);
    const free = transfer.logIndexes.find((i) => !held.some((h) => h.log_index === i));
    if (!own && free !== undefined) {
      await client.query(
        'INSERT INTO settlement_transfer_claims (chain_id, tx_hash, log_index, payout_id) VALUES ($1, $2, $3, $4)',
        [transfer.chainId, txHash, free, payoutId],
      );
    }
    await client.query('COMMIT');
    if (own) return { claimed: true, logIndex: own.log_index };
    if (free !== undefined) return { claimed: true, logIndex: free };
    return { claimed: false, heldBy: [...new Set(held.map((h) => h.payout_id))] };
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
}

export type MismatchReason = 'no_matching_transfer' | 'claimed_by_other';

/**
 * Notes that the payout's settlement transaction does not pay it. Returns true the first time for
 * this payout and transaction (the alert counts it then), false on every later check (a retry).
 */
export async function recordTransferMismatch(
  db: Db,
  mismatch: { payoutId: string; txHash: string; reason: MismatchReason; detail: string },
): Promise<boolean> {
  const { rows } = await db.query<{ first: boolean }>(
    `INSERT INTO settlement_transfer_mismatches (payout_id, tx_hash, reason, detail)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (payout_id, tx_hash) DO UPDATE
       SET reason = EXCLUDED.reason, detail = EXCLUDED.detail, last_seen_at = now(),
           checks = settlement_transfer_mismatches.checks + 1
     RETURNING (xmax = 0) AS first`,
    [mismatch.payoutId, mismatch.txHash.toLowerCase(), mismatch.reason, mismatch.detail],
  );
  return rows[0]?.first ?? false;
}
