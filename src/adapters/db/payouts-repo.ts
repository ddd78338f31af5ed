import type { PayoutRecord } from '../../domain/payout';
import type { Db } from './pool';

export interface PayoutRow {
  id: string;
  partner_id: string;
  workflow_id: string;
  run_id: string;
  version: number;
  status: PayoutRecord['status'];
  amount_centavos: bigint;
  min_amount_usdt_units: bigint;
  settled_amount_usdt_units: bigint;
  pix_key: string;
  pix_key_type: PayoutRecord['pixKeyType'];
  receiver_wallet: string;
  pix_copy_paste: string;
  provider_charge_id: string | null;
  blockchain_tx_id: string;
  paid_at: Date | null;
  payment_event_id: string | null;
  confirmed_at: Date | null;
  failure_reason: PayoutRecord['failureReason'] | null;
  created_at: Date;
  updated_at: Date;
}

export interface PayoutLocation {
  payoutId: string;
  workflowId: string;
  runId: string;
  status: PayoutRecord['status'];
  /** The transfer that completed it, once COMPLETED (absent in answers recorded by older code). */
  blockchainTxId?: string;
}

function toRecord(row: PayoutRow): PayoutRecord {
  const record: PayoutRecord = {
    id: row.id,
    partnerId: row.partner_id,
    status: row.status,
    amountCentavos: row.amount_centavos.toString(),
    minAmountUsdtUnits: row.min_amount_usdt_units.toString(),
    settledAmountUsdtUnits: row.settled_amount_usdt_units.toString(),
    pixKey: row.pix_key,
    pixKeyType: row.pix_key_type,
    receiverWallet: row.receiver_wallet,
    pixCopyPaste: row.pix_copy_paste,
    blockchainTxId: row.blockchain_tx_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    version: row.version,
  };
  if (row.provider_charge_id) record.providerChargeId = row.provider_charge_id;
  if (row.paid_at) record.paidAt = row.paid_at.toISOString();
  if (row.payment_event_id) record.paymentEventId = row.payment_event_id;
  if (row.confirmed_at) record.confirmedAt = row.confirmed_at.toISOString();
  if (row.failure_reason) record.failureReason = row.failure_reason;
  return record;
}

/**
 * Writes the payout as the workflow holds it. Within one run the version check makes the write
 * idempotent and keeps an activity retry of an older state from overwriting a newer one, and a
 * terminal status supersedes a non-terminal one whatever the versions: a workflow task that is redone
 * after its local activity wrote an interim state may decide the payout's end at that same version.
 * For the same reason a non-terminal status never overwrites a terminal one of the same run, whatever
 * its version: the attempt that lost its task may still finish a local write (a worker cut off from
 * Temporal but not from the database) after the redo has ended the payout.
 * Another run of the workflow (an operator's reset, whose versions restart from the reset point) wins
 * when its change was decided later: a reset run's new decisions all come after the old run's last.
 */
export async function upsertPayout(
  db: Db,
  p: PayoutRecord,
  workflowId: string,
  runId: string,
): Promise<void> {
  const { text, values } = upsertPayoutStatement(p, { workflowId, runId }, 1);
  await db.query(text, values);
}

/**
 * upsertPayout's statement, as a fragment to run alone or inside another statement's WITH:
 * `$<first>` onwards are its parameters.
 */
function upsertPayoutStatement(
  p: PayoutRecord,
  run: PayoutRun,
  first: number,
): { text: string; values: unknown[] } {
  const params = Array.from({ length: 21 }, (_, i) => `$${first + i}`).join(',');
  return {
    text: `INSERT INTO payouts (id, partner_id, workflow_id, run_id, version, status, amount_centavos, min_amount_usdt_units,
       settled_amount_usdt_units, pix_key, pix_key_type, receiver_wallet, pix_copy_paste, provider_charge_id,
       blockchain_tx_id, paid_at, confirmed_at, failure_reason, created_at, updated_at, payment_event_id)
     VALUES (${params})
     ON CONFLICT (id) DO UPDATE SET
       run_id = EXCLUDED.run_id, version = EXCLUDED.version, status = EXCLUDED.status,
       settled_amount_usdt_units = EXCLUDED.settled_amount_usdt_units, pix_copy_paste = EXCLUDED.pix_copy_paste,
       provider_charge_id = EXCLUDED.provider_charge_id, blockchain_tx_id = EXCLUDED.blockchain_tx_id,
       paid_at = EXCLUDED.paid_at, payment_event_id = EXCLUDED.payment_event_id,
       confirmed_at = EXCLUDED.confirmed_at, failure_reason = EXCLUDED.failure_reason,
       updated_at = EXCLUDED.updated_at
     WHERE (payouts.run_id <> EXCLUDED.run_id AND EXCLUDED.updated_at > payouts.updated_at)
        OR (payouts.run_id = EXCLUDED.run_id
            AND ((payouts.version < EXCLUDED.version
                  AND (EXCLUDED.status IN ('COMPLETED', 'FAILED') OR payouts.status NOT IN ('COMPLETED', 'FAILED')))
                 OR (EXCLUDED.status IN ('COMPLETED', 'FAILED') AND payouts.status NOT IN ('COMPLETED', 'FAILED'))))`,
    values: [
      p.id,
      p.partnerId,
      run.workflowId,
      run.runId,
      p.version,
      p.status,
      p.amountCentavos,
      p.minAmountUsdtUnits,
      p.settledAmountUsdtUnits,
      p.pixKey,
      p.pixKeyType,
      p.receiverWallet,
      p.pixCopyPaste,
      p.providerChargeId ?? null,
      p.blockchainTxId,
      p.paidAt ?? null,
      p.confirmedAt ?? null,
      p.failureReason ?? null,
      p.createdAt,
      p.updatedAt,
      p.paymentEventId ?? null,
    ],
  };
}

/**
 * Every column PayoutRow maps, by name: what a prepared statement reads of a payout. Never `*` in
 * one: a column a migration adds would change its result type, which PostgreSQL refuses to run
 * under a plan cached on the connection ("cached plan must not change result type") until the
 * connection ends.
 */
export const PAYOUT_COLUMNS = [
  'id',
  'partner_id',
  'workflow_id',
  'run_id',
  'version',
  'status',
  'amount_centavos',
  'min_amount_usdt_units',
  'settled_amount_usdt_units',
  'pix_key',
  'pix_key_type',
  'receiver_wallet',
  'pix_copy_paste',
  'provider_charge_id',
  'blockchain_tx_id',
  'paid_at',
  'payment_event_id',
  'confirmed_at',
  'failure_reason',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof PayoutRow)[];

/** The workflow run that holds a payout, as its read-model row names it. */
export interface PayoutRun {
  workflowId: string;
  runId: string;
}

/** A payout as the read model holds it, with the workflow that writes it. */
export type StoredPayout = PayoutRecord & { workflowId: string; runId: string };

export function toStoredPayout(row: PayoutRow): StoredPayout {
  return { ...toRecord(row), workflowId: row.workflow_id, runId: row.run_id };
}

export async function findPartnerPayout(
  db: Db,
  partnerId: string,
  payoutId: string,
): Promise<StoredPayout | null> {
  const { rows } = await db.query<PayoutRow>('SELECT * FROM payouts WHERE id = $1 AND partner_id = $2', [
    payoutId,
    partnerId,
  ]);
  const row = rows[0];
  return row ? toStoredPayout(row) : null;
}

/**
 * The statement that brings a payout's row up to `p`, a state its workflow answered (POST's catch-up,
 * create-payout.ts), as a fragment to run alone or inside another statement's WITH: `$<first>`
 * onwards are its parameters. It updates the row the workflow's own write created, in its own run,
 * only to a newer version, and never a terminal state back to a live one: upsertPayout's rule for
 * the same run, decided against the row as it is when the statement runs. No row, no write: the
 * workflow's write, which the version guard makes one with this one, is still to come.
 *
 * With `run`, the workflow was started with its charge by the api (docs/decisions.md D81) and may
 * not have run a task yet: the row is written as the workflow's first write would (upsertPayout,
 * same run, same version), whichever of the two comes first.
 */
export function catchUpPayoutStatement(
  p: PayoutRecord,
  first: number,
  run?: PayoutRun,
): { text: string; values: unknown[] } {
  if (run) return upsertPayoutStatement(p, run, first);
  const $ = (i: number) => `$${first + i}`;
  return {
    text: `UPDATE payouts SET version = ${$(2)}, status = ${$(3)}, settled_amount_usdt_units = ${$(4)},
             pix_copy_paste = ${$(5)}, provider_charge_id = ${$(6)}, blockchain_tx_id = ${$(7)}, paid_at = ${$(8)},
             payment_event_id = ${$(9)}, confirmed_at = ${$(10)}, failure_reason = ${$(11)}, updated_at = ${$(12)}
            WHERE id = ${$(0)} AND partner_id = ${$(1)} AND version < ${$(2)}
              AND (${$(3)}::text IN ('COMPLETED', 'FAILED') OR status NOT IN ('COMPLETED', 'FAILED'))`,
    values: [
      p.id,
      p.partnerId,
      p.version,
      p.status,
      p.settledAmountUsdtUnits,
      p.pixCopyPaste,
      p.providerChargeId ?? null,
      p.blockchainTxId,
      p.paidAt ?? null,
      p.paymentEventId ?? null,
      p.confirmedAt ?? null,
      p.failureReason ?? null,
      p.updatedAt,
    ],
  };
}

/**
 * POST's catch-up: the update-with-start answers as soon as the workflow holds the charge, which can
 * be before its activity has written that to the read model. A GET that falls back to the read model
 * (worker down, workflow deleted) must still show the pix_copy_paste POST hands out, so the api writes
 * the same version itself; the version guard makes the two writes one. With an Idempotency-Key it is
 * part of the key's record (markIdempotencyKeyRecorded).
 */
export async function catchUpPayout(db: Db, p: PayoutRecord, run?: PayoutRun): Promise<void> {
  const { text, values } = catchUpPayoutStatement(p, 1, run);
  await db.query(text, values);
}

export async function findPayoutLocation(db: Db, payoutId: string): Promise<PayoutLocation | null> {
  const { rows } = await db.query<
    Pick<PayoutRow, 'id' | 'workflow_id' | 'run_id' | 'status' | 'blockchain_tx_id'>
  >('SELECT id, workflow_id, run_id, status, blockchain_tx_id FROM payouts WHERE id = $1', [payoutId]);
  const row = rows[0];
  if (!row) return null;
  return {
    payoutId: row.id,
    workflowId: row.workflow_id,
    runId: row.run_id,
    status: row.status,
    ...(row.blockchain_tx_id ? { blockchainTxId: row.blockchain_tx_id } : {}),
  };
}

export interface PayoutListQuery {
  partnerId: string;
  status?: PayoutRecord['status'];
  /** Inclusive lower bound on created_at: an ISO 8601 timestamp, compared by PostgreSQL at full precision. */
  createdAtGte?: string;
  /** Exclusive upper bound on created_at, as createdAtGte. */
  createdAtLt?: string;
  /** The id of the last payout of the previous page: only payouts after it in the list order. */
  startingAfter?: string;
  limit: number;
}

/**
 * One page of a partner's payouts, newest first (created_at DESC, id DESC), and whether more follow;
 * null when `startingAfter` is not one of the partner's payouts.
 *
 * A keyset rather than an offset: rows inserted while a client pages never shift the rows of later
 * pages, so paging sees every row that existed when it began exactly once. The id breaks ties
 * between equal created_at values, so the order is total. The cursor's (created_at, id) is read
 * inside the query, never round-tripped through a JS Date (milliseconds) that would misplace a
 * microsecond timestamp, and without the list's filters: a cursor payout whose status changed
 * since the last page still marks the same place. The comparison matches the list indexes, so a
 * page is one index range scan.
 */
export async function listPartnerPayouts(
  db: Db,
  q: PayoutListQuery,
): Promise<{ payouts: PayoutRecord[]; hasMore: boolean } | null> {
  const params: unknown[] = [q.partnerId];
  const param = (value: unknown) => `$${params.push(value)}`;
  const where = ['partner_id = $1'];
  if (q.startingAfter !== undefined) {
    const { rowCount } = await db.query('SELECT 1 FROM payouts WHERE id = $1 AND partner_id = $2', [
      q.startingAfter,
      q.partnerId,
    ]);
    // Rows are never deleted, so a cursor found here is still there for the query below.
    if (rowCount === 0) return null;
    where.push(
      `(created_at, id) < (SELECT created_at, id FROM payouts WHERE id = ${param(q.startingAfter)} AND partner_id = $1)`,
    );
  }
  if (q.status !== undefined) where.push(`status = ${param(q.status)}`);
  if (q.createdAtGte !== undefined) where.push(`created_at >= ${param(q.createdAtGte)}::timestamptz`);
  if (q.createdAtLt !== undefined) where.push(`created_at < ${param(q.createdAtLt)}::timestamptz`);
  // One row past the page tells whether another page exists, without a count.
  const { rows } = await db.query<PayoutRow>(
    `SELECT * FROM payouts WHERE ${where.join(' AND ')}
     ORDER BY created_at DESC, id DESC LIMIT ${param(q.limit + 1)}`,
    params,
  );
  return { payouts: rows.slice(0, q.limit).map(toRecord), hasMore: rows.length > q.limit };
}
