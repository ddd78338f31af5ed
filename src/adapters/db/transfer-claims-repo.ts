import type { Db } from './pool';

/** One USDT Transfer log on one chain: what a payout's settlement is proven by. */
export interface OnChainTransfer {
  chainId: number;
  txHash: string;
  logIndex: number;
}

/**
 * Claims the transfer for the payout, so that one on-chain transfer settles at most one payout.
 * Idempotent for the same payout (an activity retry); returns the payout that holds the claim, which
 * is another one when the same transfer was already reported for it.
 */
export async function claimTransfer(db: Db, transfer: OnChainTransfer, payoutId: string): Promise<string> {
  const txHash = transfer.txHash.toLowerCase();
  const { rows } = await db.query<{ payout_id: string }>(
    `INSERT INTO settlement_transfer_claims (chain_id, tx_hash, log_index, payout_id)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING
     RETURNING payout_id`,
    [transfer.chainId, txHash, transfer.logIndex, payoutId],
  );
  if (rows[0]) return rows[0].payout_id;
  const { rows: held } = await db.query<{ payout_id: string }>(
    'SELECT payout_id FROM settlement_transfer_claims WHERE chain_id = $1 AND tx_hash = $2 AND log_index = $3',
    [transfer.chainId, txHash, transfer.logIndex],
  );
  return held[0]!.payout_id;
}
