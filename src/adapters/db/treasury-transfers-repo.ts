import type { PoolClient } from 'pg';
import type { Db } from './pool';

/**
 * One signed transaction for a treasury transfer's nonce: the first, a fee-raised replacement, or its
 * cancel (`cancels`: to the treasury itself, no value, for a receiver flagged while it waited unmined).
 */
export interface TreasuryTransferAttempt {
  attempt: number;
  rawTransaction: `0x${string}`;
  txHash: `0x${string}`;
  signedAt: Date;
  cancels: boolean;
}

/**
 * One round of a payout's treasury transfer: a nonce and the transactions signed for it. A payout
 * has one round, unless a round's transaction was mined and reverted because the treasury could not
 * send: that round is closed (`revertedAt`), nothing of it can land any more, and the payout sends
 * again in a new round, at a new nonce.
 */
export interface TreasuryTransfer {
  payoutId: string;
  /** 0 for the first; at most one round of a payout is open (revertedAt null). */
  round: number;
  chainId: number;
  /** The treasury account that signed it (lower case). */
  fromAddress: string;
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
  /** When the round was closed after its mined revert, the treasury unable to send; null while open. */
  revertedAt: Date | null;
}

export type SignedTransaction = { rawTransaction: `0x${string}`; txHash: `0x${string}`; cancels?: boolean };

/** Transfers already signed from the same account, seen by the signer while it holds the nonce lock. */
export interface SignedTransfers {
  /** This account's open transfers at or above `nonce` (i.e. not yet mined when `nonce` is the mined count). */
  fromNonce(nonce: number): Promise<TreasuryTransfer[]>;
}

// One advisory lock for nonce allocation: transfers are signed one at a time across all workers.
const TREASURY_NONCE_LOCK = 42_161;

const COLUMNS =
  'payout_id, round, chain_id, from_address, nonce, to_address, amount_units, raw_transaction, tx_hash, mined_tx_hash, reverted_at, created_at';
/** The payout's latest round, open or closed. */
const LATEST_ROUND = `SELECT ${COLUMNS} FROM treasury_transfers WHERE payout_id = $1 ORDER BY round DESC LIMIT 1`;

/**
 * Returns the payout's open treasury transfer, signing and storing it first if there is none (no
 * round yet, or only closed ones: then a new round). The signed transaction is committed before
 * anyone broadcasts it, so retries and new workers re-send exactly that transaction and the payout is
 * paid once. `sign` runs under the nonce lock and is shown the account's other signed transfers, so
 * it can reserve the funds they may still spend.
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
    const existing = await client.query<TransferRow>(LATEST_ROUND, [req.payoutId]);
    const latest = existing.rows[0];
    if (latest && latest.reverted_at === null) {
      const [transfer] = await withAttempts(client, existing.rows);
      await client.query('COMMIT');
      return transfer!;
    }
    const closed = await client.query('SELECT 1 FROM treasury_closed_payouts WHERE payout_id = $1', [
      req.payoutId,
    ]);
    if (closed.rowCount) throw new TreasuryClosedError(req.payoutId);
    const round = latest ? latest.round + 1 : 0;
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
            WHERE chain_id = $1 AND from_address = $2 AND nonce >= $3 AND reverted_at IS NULL
            ORDER BY nonce`,
          [req.chainId, fromAddress, from],
        );
        return withAttempts(client, pending.rows);
      },
    });
    const inserted = await client.query<TransferRow>(
      `INSERT INTO treasury_transfers
         (payout_id, round, nonce, to_address, amount_units, raw_transaction, tx_hash, chain_id, from_address)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       RETURNING ${COLUMNS}`,
      [
        req.payoutId,
        round,
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
      `INSERT INTO treasury_transfer_attempts (payout_id, round, attempt, raw_transaction, tx_hash)
       VALUES ($1, $2, 0, $3, $4)`,
      [req.payoutId, round, signed.rawTransaction, signed.txHash],
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

/** The payout's treasury rounds were closed (it is failing): nothing may be signed for it any more. */
export class TreasuryClosedError extends Error {
  constructor(readonly payoutId: string) {
    super(`payout ${payoutId} has failed with nothing signed: no transfer may be signed for it`);
    this.name = 'TreasuryClosedError';
  }
}

/**
 * Closes the payout's treasury rounds for good, unless a transfer is signed for it and not reverted
 * ('signed': it may still land, so the payout may not fail). `deadRound`: that round's transaction is
 * proven unable to land (reverted at finality, its nonce taken by another), so it is closed along
 * with new signings, and 'signed' answers only a newer round (one an attempt still running on some
 * worker signed after the proof was read). `openRoundCannotLand`, from a workflow that names no round:
 * whatever round is open is taken as the dead one. Under the nonce lock every signing takes, so no
 * attempt can sign after 'closed' is answered. Idempotent.
 */
export async function closeTreasuryRounds(
  db: Db,
  payoutId: string,
  opts: { openRoundCannotLand?: boolean; deadRound?: number } = {},
): Promise<'closed' | 'signed'> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [TREASURY_NONCE_LOCK]);
    const { rows } = await client.query<TransferRow>(LATEST_ROUND, [payoutId]);
    const open = rows[0] && rows[0].reverted_at === null ? rows[0] : undefined;
    const dead =
      opts.deadRound !== undefined ? open?.round === opts.deadRound : opts.openRoundCannotLand === true;
    if (open !== undefined && !dead) {
      await client.query('COMMIT');
      return 'signed';
    }
    await client.query('INSERT INTO treasury_closed_payouts (payout_id) VALUES ($1) ON CONFLICT DO NOTHING', [
      payoutId,
    ]);
    await client.query('COMMIT');
    return 'closed';
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** The payout's latest round, open or closed (`revertedAt`); null when nothing was ever signed for it. */
export async function findTreasuryTransfer(db: Db, payoutId: string): Promise<TreasuryTransfer | null> {
  const { rows } = await db.query<TransferRow>(LATEST_ROUND, [payoutId]);
  if (!rows[0]) return null;
  const [transfer] = await withAttempts(db, rows);
  return transfer!;
}

/** The account's open rounds at these nonces: the transactions of ours that may fill them. */
export async function findOpenTreasuryTransfersAt(
  db: Db,
  account: { chainId: number; fromAddress: string },
  nonces: number[],
): Promise<TreasuryTransfer[]> {
  const { rows } = await db.query<TransferRow>(
    `SELECT ${COLUMNS} FROM treasury_transfers
      WHERE chain_id = $1 AND from_address = $2 AND nonce = ANY($3::bigint[]) AND reverted_at IS NULL
      ORDER BY nonce`,
    [account.chainId, account.fromAddress.toLowerCase(), nonces],
  );
  return withAttempts(db, rows);
}

/**
 * Closes the payout's open round after its transaction `minedTxHash` was mined and reverted (its
 * nonce is used up, no USDT moved): the next getOrCreateTreasuryTransfer signs a new round. True when
 * this call closed it, false when it was closed already (a retry).
 */
export async function closeTreasuryRound(
  db: Db,
  payoutId: string,
  round: number,
  minedTxHash: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE treasury_transfers SET reverted_at = now(), mined_tx_hash = $3
      WHERE payout_id = $1 AND round = $2 AND reverted_at IS NULL`,
    [payoutId, round, minedTxHash],
  );
  return rowCount === 1;
}

/**
 * Signs and stores a replacement for the payout's open transfer (same nonce, higher fees) when its latest
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
      `SELECT ${COLUMNS} FROM treasury_transfers WHERE payout_id = $1 AND reverted_at IS NULL FOR UPDATE`,
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
      `INSERT INTO treasury_transfer_attempts (payout_id, round, attempt, raw_transaction, tx_hash, cancels)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [
        payoutId,
        transfer.round,
        latest.attempt + 1,
        signed.rawTransaction,
        signed.txHash,
        signed.cancels === true,
      ],
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
 * Records which attempt of the open round was seen mined. Only one can be mined at a time, but a
 * reorg may swap which: the latest sighting wins, and the one seen confirmed is the last written.
 */
export async function recordMinedTreasuryTransfer(
  db: Db,
  payoutId: string,
  round: number,
  txHash: string,
): Promise<void> {
  // By round: a slow attempt of an earlier round must not write its hash on the next round.
  await db.query(
    `UPDATE treasury_transfers SET mined_tx_hash = $3
      WHERE payout_id = $1 AND round = $2 AND reverted_at IS NULL AND mined_tx_hash IS DISTINCT FROM $3`,
    [payoutId, round, txHash],
  );
}

interface TransferRow {
  payout_id: string;
  round: number;
  chain_id: number;
  from_address: string;
  nonce: bigint;
  to_address: string;
  amount_units: bigint;
  raw_transaction: `0x${string}`;
  tx_hash: `0x${string}`;
  mined_tx_hash: `0x${string}` | null;
  reverted_at: Date | null;
  created_at: Date;
}

async function withAttempts(db: Db | PoolClient, rows: TransferRow[]): Promise<TreasuryTransfer[]> {
  if (rows.length === 0) return [];
  const { rows: attempts } = await db.query<{
    payout_id: string;
    round: number;
    attempt: number;
    raw_transaction: `0x${string}`;
    tx_hash: `0x${string}`;
    signed_at: Date;
    cancels: boolean;
  }>(
    `SELECT payout_id, round, attempt, raw_transaction, tx_hash, signed_at, cancels FROM treasury_transfer_attempts
      WHERE payout_id = ANY($1::uuid[]) ORDER BY payout_id, round, attempt`,
    [rows.map((r) => r.payout_id)],
  );
  return rows.map((row) => {
    const own = attempts
      .filter((a) => a.payout_id === row.payout_id && a.round === row.round)
      .map((a) => ({
        attempt: a.attempt,
        rawTransaction: a.raw_transaction,
        txHash: a.tx_hash,
        signedAt: a.signed_at,
        cancels: a.cancels,
      }));
    return {
      payoutId: row.payout_id,
      round: row.round,
      chainId: row.chain_id,
      fromAddress: row.from_address,
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
              cancels: false,
            },
            ...own,
          ],
      minedTxHash: row.mined_tx_hash,
      revertedAt: row.reverted_at,
    };
  });
}
