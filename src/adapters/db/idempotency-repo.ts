import { randomUUID } from 'node:crypto';
import type { PayoutRecord } from '../../domain/payout';
import { catchUpPayoutStatement, type PayoutRun } from './payouts-repo';
import type { Db } from './pool';

export type IdempotencyClaim =
  /**
   * This request owns the key, under `token`, until its lease runs out: create the payout, or
   * (`resumed`) resume the one an abandoned claim may have started already.
   */
  | { kind: 'claimed'; payoutId: string; workflowId: string; token: string; resumed?: true }
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
  /**
   * How long the claim lives unless its request renews it (renewIdempotencyClaim); a claim whose lease
   * has run out is treated as abandoned (its request died) and taken over (docs/decisions.md D73).
   */
  leaseSeconds: number;
}

/** A claim as its holder names it: any write through it applies only while `token` is still the row's. */
export interface ClaimRef {
  partnerId: string;
  key: string;
  token: string;
}

/**
 * A claim written without a lease (before the lease existed, or by an api of the previous version
 * during a deploy) is stale this long after `claimed_at`, as it always was: that api never renews it.
 */
const UNLEASED_CLAIM_SECONDS = 60;

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

/**
 * Claims the key for this request. Every claim, fresh or taken over, gets a new fencing token, and
 * its lease runs until the database's `now()` plus `leaseSeconds`: both sides of a takeover read
 * the same clock, never an api's.
 */
export async function claimIdempotencyKey(db: Db, req: ClaimRequest): Promise<IdempotencyClaim> {
  for (let round = 0; round < MAX_CLAIM_ROUNDS; round += 1) {
    const outcome = await tryClaim(db, req);
    if (outcome) return outcome;
  }
  return { kind: 'in_flight' };
}

/** One claim attempt; undefined when the key vanished between the conflict and the re-read. */
async function tryClaim(db: Db, req: ClaimRequest): Promise<IdempotencyClaim | undefined> {
  const token = randomUUID();
  // A new key, the common case, is one autocommit statement: what BEGIN, this INSERT and COMMIT did
  // in three round trips (docs/decisions.md D79). A concurrent insert of the same key makes it wait
  // for that transaction, then do nothing.
  const inserted = await db.query(
    `INSERT INTO idempotency_keys (partner_id, key, payout_id, workflow_id, state, claimed_at, expires_at,
                                   claim_token, lease_until)
     VALUES ($1, $2, $3, $4, 'claimed', now(), now() + make_interval(secs => $5),
             $6, now() + make_interval(secs => $7))
     ON CONFLICT (partner_id, key) DO NOTHING`,
    [req.partnerId, req.key, req.newPayoutId, req.newWorkflowId, req.ttlSeconds, token, req.leaseSeconds],
  );
  if (inserted.rowCount === 1)
    return { kind: 'claimed', payoutId: req.newPayoutId, workflowId: req.newWorkflowId, token };
  // The key exists: read it under its row lock and decide in one transaction. Freed since (a released
  // claim), it is not there to read, and the next round inserts it again.
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    // FOR UPDATE waits for a transaction holding the row; if that one deletes it (a released
    // claim), the row is gone by the time this read returns.
    const { rows } = await client.query<KeyRow>(
      `SELECT payout_id, workflow_id, state, refusal, expires_at <= now() AS expired,
              COALESCE(lease_until, claimed_at + make_interval(secs => $3)) <= now() AS stale
         FROM idempotency_keys WHERE partner_id = $1 AND key = $2 FOR UPDATE`,
      [req.partnerId, req.key, UNLEASED_CLAIM_SECONDS],
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
                expires_at = now() + make_interval(secs => $5), claim_token = $6,
                lease_until = now() + make_interval(secs => $7)
          WHERE partner_id = $1 AND key = $2`,
        [req.partnerId, req.key, req.newPayoutId, req.newWorkflowId, req.ttlSeconds, token, req.leaseSeconds],
      );
      outcome = { kind: 'claimed', payoutId: req.newPayoutId, workflowId: req.newWorkflowId, token };
    } else if (row.state === 'recorded') {
      outcome = { kind: 'recorded', payoutId: row.payout_id, workflowId: row.workflow_id };
    } else if (row.state === 'refused') {
      outcome = { kind: 'refused', refusal: row.refusal ?? '' };
    } else if (!row.stale) {
      outcome = { kind: 'in_flight' };
    } else {
      // The takeover keeps the payout and its workflow id; the new token fences the previous holder
      // out of every later write, should it be alive after all.
      await client.query(
        `UPDATE idempotency_keys SET claimed_at = now(), claim_token = $3, lease_until = now() + make_interval(secs => $4)
          WHERE partner_id = $1 AND key = $2`,
        [req.partnerId, req.key, token, req.leaseSeconds],
      );
      outcome = {
        kind: 'claimed',
        payoutId: row.payout_id,
        workflowId: row.workflow_id,
        token,
        resumed: true,
      };
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

/**
 * The holder extends its lease to `leaseSeconds` from now (the database's clock). False when the
 * claim is no longer its own: taken over (another token), or no longer a claim.
 */
export async function renewIdempotencyClaim(db: Db, claim: ClaimRef, leaseSeconds: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE idempotency_keys SET lease_until = now() + make_interval(secs => $4)
      WHERE partner_id = $1 AND key = $2 AND claim_token = $3 AND state = 'claimed'`,
    [claim.partnerId, claim.key, claim.token, leaseSeconds],
  );
  return rowCount === 1;
}

/**
 * The holder ends its lease now without an outcome (its request ends with the payout's fate still
 * open): the claim stays, with its payout and workflow id, and the next request takes it over at once
 * instead of waiting for the lease to run out. False when the claim was no longer its own.
 */
export async function endIdempotencyLease(db: Db, claim: ClaimRef): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE idempotency_keys SET lease_until = now()
      WHERE partner_id = $1 AND key = $2 AND claim_token = $3 AND state = 'claimed'`,
    [claim.partnerId, claim.key, claim.token],
  );
  return rowCount === 1;
}

/**
 * The payout exists and is recorded: from now on the key replays it. A no-op (false) once the claim
 * was taken over: the new holder records the same payout, or answers for the key otherwise.
 *
 * With `catchUp`, the payout's read-model row is brought up to that state in the same statement
 * (catchUpPayoutStatement), whether or not the claim is still this request's, as it was before the
 * record when they were two round trips (docs/decisions.md D79): both are written or neither. `run`:
 * the workflow the api started with its charge (D81), whose row the catch-up writes if it is missing.
 */
export async function markIdempotencyKeyRecorded(
  db: Db,
  claim: ClaimRef,
  catchUp?: PayoutRecord,
  run?: PayoutRun,
): Promise<boolean> {
  const record = `UPDATE idempotency_keys SET state = 'recorded'
      WHERE partner_id = $1 AND key = $2 AND claim_token = $3 AND state = 'claimed'`;
  const keyValues = [claim.partnerId, claim.key, claim.token];
  if (!catchUp) {
    const { rowCount } = await db.query(record, keyValues);
    return rowCount === 1;
  }
  const payout = catchUpPayoutStatement(catchUp, keyValues.length + 1, run);
  // A data-modifying WITH runs once whatever the outer statement reads of it.
  const { rows } = await db.query<{ recorded: number }>(
    `WITH caught_up AS (${payout.text}), recorded AS (${record} RETURNING 1)
     SELECT count(*)::int AS recorded FROM recorded`,
    [...keyValues, ...payout.values],
  );
  return rows[0]!.recorded === 1;
}

/**
 * The key's request was refused for good (screening flagged the receiver): nothing was created, and
 * a replay within the key's 24 h gets the same refusal. A no-op (false) once the claim was taken over.
 */
export async function markIdempotencyKeyRefused(db: Db, claim: ClaimRef, refusal: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE idempotency_keys SET state = 'refused', refusal = $4
      WHERE partner_id = $1 AND key = $2 AND claim_token = $3 AND state = 'claimed'`,
    [claim.partnerId, claim.key, claim.token, refusal],
  );
  return rowCount === 1;
}

/**
 * Gives up a claim whose payout could not be created, so the key is free for a new attempt (with a
 * new payout id and workflow id). A no-op (false) once the claim was taken over: a holder fenced out
 * must never free a key whose new holder may be starting its payout.
 *
 * The transaction names the token to the database: a claim with a token is deleted only by one that
 * does, so a release by an api of the previous version (by payout id alone) cannot free a key an api
 * of this version took over from it (the delete trigger of migration 1795430000000).
 */
export async function releaseIdempotencyKey(db: Db, claim: ClaimRef): Promise<boolean> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT set_config('idempotency.claim_token', $1, true)`, [claim.token]);
    const { rowCount } = await client.query(
      `DELETE FROM idempotency_keys
        WHERE partner_id = $1 AND key = $2 AND claim_token = $3 AND state = 'claimed'`,
      [claim.partnerId, claim.key, claim.token],
    );
    await client.query('COMMIT');
    return rowCount === 1;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
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
