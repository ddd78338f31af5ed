import type { PoolClient } from 'pg';
import type { Db } from './pool';

/** One signed transaction for a treasury transfer's nonce: the first, or a fee-raised replacement. */
export interface TreasuryTransferAttempt {
  attempt: number;
  rawTransaction: `0x${string}`;
  txHash: `0x${string}`;
  signedAt: Date;
}

export interface TreasuryTransfer {
  payoutId: string;
  nonce: number;
  toAddress: string;
  amountUnits: bigint;
  /** The first transaction signed (attempt 0); kept as the transfer's name in logs and older rows. */
  rawTransaction: `0x${string}`;
  txHash: `0x${string}`;
  /**
   * Every transaction signed for this nonce, oldest first: any one of them may be the one mined (only
   * one can be, they share the nonce). Never empty; the last is the one to (re)broadcast.
   */
  attempts: TreasuryTransferAttempt[];
  /** The attempt seen mined (confirmed or reverted), once seen. */
  minedTxHash: `0x${string}` | null;
}

export type SignedTransaction = { rawTransaction: `0x${string}`; txHash: `0x${string}` };

/** Transfers already signed from the same account, seen by the signer while it holds the nonce lock. */
export interface SignedTransfers {
  /** This account's stored transfers at or above `nonce` (i.e. not yet mined when `nonce` is the mined count). */
  fromNonce(nonce: number): Promise<TreasuryTransfer[]>;
}

// One advisory lock for nonce allocation: transfers are signed one at a time across all workers.
const TREASURY_NONCE_LOCK = 42_161;

const COLUMNS =
  'payout_id, nonce, to_address, amount_units, raw_transaction, tx_hash, mined_tx_hash, created_at';

/**
 * Returns the payout's treasury transfer, signing and storing it first if there is none. The signed
 * transaction is committed before anyone broadcasts it, so retries and new workers re-send exactly
 * that transaction and the payout is paid once. `sign` runs under the nonce lock and is shown the
 * account's other signed transfers, so it can reserve the funds they may still spend.
 */
export async function getOrCreateTreasuryTransfer(
  db: Db,
  req: {
    payoutId: string;
    toAddress: string;
    amountUnits: bigint;
    /** The treasury account whose nonces are allocated: one sequence per chain and address. */
    chainId: number;
    fromAddress: string;
  },
  chainNonce: () => Promise<number>,
  sign: (nonce: number, signed: SignedTransfers) => Promise<SignedTransaction>,
): Promise<TreasuryTransfer> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [TREASURY_NONCE_LOCK]);
    const existing = await client.query<TransferRow>(
      `SELECT ${COLUMNS} FROM treasury_transfers WHERE payout_id = $1`,
      [req.payoutId],
    );
    if (existing.rows[0]) {
      const [transfer] = await withAttempts(client, existing.rows);
      await client.query('COMMIT');
      return transfer!;
    }
    const fromAddress = req.fromAddress.toLowerCase();
    const { rows } = await client.query<{ next: bigint | null }>(
      'SELECT max(nonce) + 1 AS next FROM treasury_transfers WHERE chain_id = $1 AND from_address = $2',
      [req.chainId, fromAddress],
    );
    const nonce = Math.max(await chainNonce(), Number(rows[0]?.next ?? 0));
    const signed = await sign(nonce, {
      fromNonce: async (from) => {
        const pending = await client.query<TransferRow>(
          `SELECT ${COLUMNS} FROM treasury_transfers
            WHERE chain_id = $1 AND from_address = $2 AND nonce >= $3 ORDER BY nonce`,
          [req.chainId, fromAddress, from],
        );
        return withAttempts(client, pending.rows);
      },
    });
    const inserted = await client.query<TransferRow>(
      `INSERT INTO treasury_transfers
         (payout_id, nonce, to_address, amount_units, raw_transaction, tx_hash, chain_id, from_address)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       RETURNING ${COLUMNS}`,
      [
        req.payoutId,
        nonce,
        req.toAddress,
        req.amountUnits,
        signed.rawTransaction,
        signed.txHash,
        req.chainId,
        fromAddress,
      ],
    );
    await client.query(
      `INSERT INTO treasury_transfer_attempts (payout_id, attempt, raw_transaction, tx_hash)
       VALUES ($1, 0, $2, $3)`,
      [req.payoutId, signed.rawTransaction, signed.txHash],
    );
    const [transfer] = await withAttempts(client, inserted.rows);
    await client.query('COMMIT');
    return transfer!;
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
}

export async function findTreasuryTransfer(db: Db, payoutId: string): Promise<TreasuryTransfer | null> {
  const { rows } = await db.query<TransferRow>(
    `SELECT ${COLUMNS} FROM treasury_transfers WHERE payout_id = $1`,
    [payoutId],
  );
  if (!rows[0]) return null;
  const [transfer] = await withAttempts(db, rows);
  return transfer!;
}

/**
 * Signs and stores a replacement for the payout's transfer (same nonce, higher fees) when its latest
 * attempt was signed at least `afterSeconds` ago and `sign` decides one is due; null otherwise. The
 * row lock makes concurrent activity attempts sign one replacement, not one each, and the attempt is
 * committed before the caller broadcasts it, so every hash that may land is known.
 */
export async function addTreasuryTransferAttempt(
  db: Db,
  payoutId: string,
  afterSeconds: number,
  sign: (latest: TreasuryTransferAttempt) => Promise<SignedTransaction | null>,
): Promise<TreasuryTransfer | null> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<TransferRow>(
      `SELECT ${COLUMNS} FROM treasury_transfers WHERE payout_id = $1 FOR UPDATE`,
      [payoutId],
    );
    const [transfer] = await withAttempts(client, rows);
    const latest = transfer?.attempts.at(-1);
    // The database's clock decides the wait, so workers with drifting clocks agree on it.
    const due = await client.query<{ due: boolean }>(
      'SELECT $1::timestamptz <= now() - make_interval(secs => $2) AS due',
      [latest?.signedAt ?? null, afterSeconds],
    );
    const signed = transfer && latest && due.rows[0]?.due ? await sign(latest) : null;
    if (!transfer || !latest || !signed) {
      await client.query('ROLLBACK');
      return null;
    }
    await client.query(
      `INSERT INTO treasury_transfer_attempts (payout_id, attempt, raw_transaction, tx_hash)
       VALUES ($1, $2, $3, $4)`,
      [payoutId, latest.attempt + 1, signed.rawTransaction, signed.txHash],
    );
    const [updated] = await withAttempts(client, rows);
    await client.query('COMMIT');
    return updated!;
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
}

/**
 * Records which attempt was seen mined. Only one can be mined at a time, but a reorg may swap which:
 * the latest sighting wins, and the one seen confirmed is the last written.
 */
export async function recordMinedTreasuryTransfer(db: Db, payoutId: string, txHash: string): Promise<void> {
  await db.query(
    'UPDATE treasury_transfers SET mined_tx_hash = $2 WHERE payout_id = $1 AND mined_tx_hash IS DISTINCT FROM $2',
    [payoutId, txHash],
  );
}

interface TransferRow {
  payout_id: string;
  nonce: bigint;
  to_address: string;
  amount_units: bigint;
  raw_transaction: `0x${string}`;
  tx_hash: `0x${string}`;
  mined_tx_hash: `0x${string}` | null;
  created_at: Date;
}

async function withAttempts(db: Db | PoolClient, rows: TransferRow[]): Promise<TreasuryTransfer[]> {
  if (rows.length === 0) return [];
  const { rows: attempts } = await db.query<{
    payout_id: string;
    attempt: number;
    raw_transaction: `0x${string}`;
    tx_hash: `0x${string}`;
    signed_at: Date;
  }>(
    `SELECT payout_id, attempt, raw_transaction, tx_hash, signed_at FROM treasury_transfer_attempts
      WHERE payout_id = ANY($1::uuid[]) ORDER BY payout_id, attempt`,
    [rows.map((r) => r.payout_id)],
  );
  return rows.map((row) => {
    const own = attempts
      .filter((a) => a.payout_id === row.payout_id)
      .map((a) => ({
        attempt: a.attempt,
        rawTransaction: a.raw_transaction,
        txHash: a.tx_hash,
        signedAt: a.signed_at,
      }));
    return {
      payoutId: row.payout_id,
      nonce: Number(row.nonce),
      toAddress: row.to_address,
      amountUnits: row.amount_units,
      rawTransaction: row.raw_transaction,
      txHash: row.tx_hash,
      // Attempt 0 is the row's own transaction. It is stored with the row (and by the migration for
      // older rows), but a row written during a rollout by code older than the attempts table has
      // none: taken from the row, it is never missing from the list of hashes that may land.
      attempts: own.some((a) => a.attempt === 0)
        ? own
        : [
            {
              attempt: 0,
              rawTransaction: row.raw_transaction,
              txHash: row.tx_hash,
              signedAt: row.created_at,
            },
            ...own,
          ],
      minedTxHash: row.mined_tx_hash,
    };
  });
}
