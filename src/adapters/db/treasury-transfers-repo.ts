import type { Db } from './pool';

export interface TreasuryTransfer {
  payoutId: string;
  nonce: number;
  toAddress: string;
  amountUnits: bigint;
  rawTransaction: `0x${string}`;
  txHash: `0x${string}`;
}

// One advisory lock for nonce allocation: transfers are signed one at a time across all workers.
const TREASURY_NONCE_LOCK = 42_161;

/**
 * Returns the payout's treasury transfer, signing and storing it first if there is none. The signed
 * transaction is committed before anyone broadcasts it, so retries and new workers re-send exactly
 * that transaction and the payout is paid once.
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
  sign: (nonce: number) => Promise<{ rawTransaction: `0x${string}`; txHash: `0x${string}` }>,
): Promise<TreasuryTransfer> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [TREASURY_NONCE_LOCK]);
    const existing = await client.query(
      'SELECT payout_id, nonce, to_address, amount_units, raw_transaction, tx_hash FROM treasury_transfers WHERE payout_id = $1',
      [req.payoutId],
    );
    if (existing.rows[0]) {
      await client.query('COMMIT');
      return toTransfer(existing.rows[0]);
    }
    const { rows } = await client.query<{ next: bigint | null }>(
      'SELECT max(nonce) + 1 AS next FROM treasury_transfers WHERE chain_id = $1 AND from_address = $2',
      [req.chainId, req.fromAddress.toLowerCase()],
    );
    const nonce = Math.max(await chainNonce(), Number(rows[0]?.next ?? 0));
    const signed = await sign(nonce);
    const inserted = await client.query(
      `INSERT INTO treasury_transfers
         (payout_id, nonce, to_address, amount_units, raw_transaction, tx_hash, chain_id, from_address)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       RETURNING payout_id, nonce, to_address, amount_units, raw_transaction, tx_hash`,
      [
        req.payoutId,
        nonce,
        req.toAddress,
        req.amountUnits,
        signed.rawTransaction,
        signed.txHash,
        req.chainId,
        req.fromAddress.toLowerCase(),
      ],
    );
    await client.query('COMMIT');
    return toTransfer(inserted.rows[0]);
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
}

export async function findTreasuryTransfer(db: Db, payoutId: string): Promise<TreasuryTransfer | null> {
  const { rows } = await db.query(
    'SELECT payout_id, nonce, to_address, amount_units, raw_transaction, tx_hash FROM treasury_transfers WHERE payout_id = $1',
    [payoutId],
  );
  return rows[0] ? toTransfer(rows[0]) : null;
}

function toTransfer(row: {
  payout_id: string;
  nonce: bigint;
  to_address: string;
  amount_units: bigint;
  raw_transaction: `0x${string}`;
  tx_hash: `0x${string}`;
}): TreasuryTransfer {
  return {
    payoutId: row.payout_id,
    nonce: Number(row.nonce),
    toAddress: row.to_address,
    amountUnits: row.amount_units,
    rawTransaction: row.raw_transaction,
    txHash: row.tx_hash,
  };
}
