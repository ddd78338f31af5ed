import type { Db } from './pool';

export type IdempotencyClaim =
  /**
   * This request owns the key: create the payout, or (`resumed`) resume the one an abandoned claim
   * may have started already.
   */
  | { kind: 'claimed'; payoutId: string; workflowId: string; resumed?: true }
  /** The key already produced a payout: replay it. */
  | { kind: 'recorded'; payoutId: string; workflowId: string }
  /** The key's request was refused by screening: the same refusal again. */
  | { kind: 'refused'; refusal: string }
  /** Another request holds the key and has not recorded its payout yet: 409. */
  | { kind: 'in_flight' };

export interface ClaimRequest {
  partnerId: string;
  key: string;
  newPayoutId: string;
  newWorkflowId: string;
  ttlSeconds: number;
  /** A claim older than this is treated as abandoned (its request died) and taken over. */
  staleClaimSeconds: number;
}

interface KeyRow {
  payout_id: string;
  workflow_id: string;
  state: 'claimed' | 'recorded' | 'refused';
  refusal: string | null;
  expired: boolean;
  stale: boolean;
}

// A key released (or expired and removed) between our failed insert and our re-read leaves nothing
// to re-read: the claim is simply tried again. Each round means another request finished with the
// key in between, so a few rounds only ever run out under a pathological storm, answered as a conflict.
const MAX_CLAIM_ROUNDS = 5;

export async function claimIdempotencyKey(db: Db, req: ClaimRequest): Promise<IdempotencyClaim> {
  for (let round = 0; round < MAX_CLAIM_ROUNDS; round += 1) {
    const outcome = await tryClaim(db, req);
    if (outcome) return outcome;
  }
  return { kind: 'in_flight' };
}

/** One claim attempt; undefined when the key vanished between the conflict and the re-read. */
async function tryClaim(db: Db, req: ClaimRequest): Promise<IdempotencyClaim | undefined> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    // A concurrent insert of the same key makes this wait for that transaction, then do nothing.
    const inserted = await client.query(
      `INSERT INTO idempotency_keys (partner_id, key, payout_id, workflow_id, state, claimed_at, expires_at)
       VALUES ($1, $2, $3, $4, 'claimed', now(), now() + make_interval(secs => $5))
       ON CONFLICT (partner_id, key) DO NOTHING`,
      [req.partnerId, req.key, req.newPayoutId, req.newWorkflowId, req.ttlSeconds],
    );
    if (inserted.rowCount === 1) {
      await client.query('COMMIT');
      return { kind: 'claimed', payoutId: req.newPayoutId, workflowId: req.newWorkflowId };
    }
    // FOR UPDATE waits for a transaction holding the row; if that one deletes it (a released
    // claim), the row is gone by the time this read returns.
    const { rows } = await client.query<KeyRow>(
      `SELECT payout_id, workflow_id, state, refusal, expires_at <= now() AS expired,
              claimed_at <= now() - make_interval(secs => $3) AS stale
         FROM idempotency_keys WHERE partner_id = $1 AND key = $2 FOR UPDATE`,
      [req.partnerId, req.key, req.staleClaimSeconds],
    );
    const row = rows[0];
    if (!row) {
      await client.query('ROLLBACK');
      return undefined;
    }
    let outcome: IdempotencyClaim;
    if (row.expired) {
      // Past 24 h the key starts a new payout (docs/decisions.md D10).
      await client.query(
        `UPDATE idempotency_keys SET payout_id = $3, workflow_id = $4, state = 'claimed', refusal = NULL, claimed_at = now(),
                expires_at = now() + make_interval(secs => $5)
          WHERE partner_id = $1 AND key = $2`,
        [req.partnerId, req.key, req.newPayoutId, req.newWorkflowId, req.ttlSeconds],
      );
      outcome = { kind: 'claimed', payoutId: req.newPayoutId, workflowId: req.newWorkflowId };
    } else if (row.state === 'recorded') {
      outcome = { kind: 'recorded', payoutId: row.payout_id, workflowId: row.workflow_id };
    } else if (row.state === 'refused') {
      outcome = { kind: 'refused', refusal: row.refusal ?? '' };
    } else if (!row.stale) {
      outcome = { kind: 'in_flight' };
    } else {
      await client.query(
        'UPDATE idempotency_keys SET claimed_at = now() WHERE partner_id = $1 AND key = $2',
        [req.partnerId, req.key],
      );
      outcome = { kind: 'claimed', payoutId: row.payout_id, workflowId: row.workflow_id, resumed: true };
    }
    await client.query('COMMIT');
    return outcome;
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
}

/** The payout exists and is recorded: from now on the key replays it. */
export async function markIdempotencyKeyRecorded(
  db: Db,
  partnerId: string,
  key: string,
  payoutId: string,
): Promise<void> {
  await db.query(
    `UPDATE idempotency_keys SET state = 'recorded' WHERE partner_id = $1 AND key = $2 AND payout_id = $3`,
    [partnerId, key, payoutId],
  );
}

/**
 * The key's request was refused for good (screening flagged the receiver): nothing was created, and
 * a replay within the key's 24 h gets the same refusal.
 */
export async function markIdempotencyKeyRefused(
  db: Db,
  partnerId: string,
  key: string,
  payoutId: string,
  refusal: string,
): Promise<void> {
  await db.query(
    `UPDATE idempotency_keys SET state = 'refused', refusal = $4
      WHERE partner_id = $1 AND key = $2 AND payout_id = $3 AND state = 'claimed'`,
    [partnerId, key, payoutId, refusal],
  );
}

/** Gives up a claim whose payout could not be created, so the key is free for a new attempt. */
export async function releaseIdempotencyKey(
  db: Db,
  partnerId: string,
  key: string,
  payoutId: string,
): Promise<void> {
  await db.query(
    `DELETE FROM idempotency_keys WHERE partner_id = $1 AND key = $2 AND payout_id = $3 AND state = 'claimed'`,
    [partnerId, key, payoutId],
  );
}

/** A live recorded (or refused) key, for replays that skip body validation entirely. */
export async function findRecordedKey(
  db: Db,
  partnerId: string,
  key: string,
): Promise<{ payoutId: string; workflowId: string; refusal: string | null } | null> {
  const { rows } = await db.query<{ payout_id: string; workflow_id: string; refusal: string | null }>(
    `SELECT payout_id, workflow_id, refusal FROM idempotency_keys
      WHERE partner_id = $1 AND key = $2 AND state IN ('recorded', 'refused') AND expires_at > now()`,
    [partnerId, key],
  );
  const row = rows[0];
  return row ? { payoutId: row.payout_id, workflowId: row.workflow_id, refusal: row.refusal } : null;
}
