import { ApplicationFailure } from '@temporalio/activity';
import type { Address } from 'viem';
import type { UsdtLedger } from '../adapters/chain/ledger-types';
import type { Db } from '../adapters/db/pool';
import { findOpenTreasuryTransfersAt, type TreasuryTransfer } from '../adapters/db/treasury-transfers-repo';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { latestAttempt } from './treasury-broadcast';

/** How many nonces below a waiting transfer are looked at for a gap: enough to name it, bounded work. */
const GAP_SCAN_LIMIT = 20;

/**
 * The check of a treasury transfer waiting unmined in the pool for a nonce gap below it, used by
 * confirmTreasuryTransfer: it resolves when there is none, and throws TreasuryNonceGap (retryable,
 * naming the nonces) when there is.
 */
export function createNonceGapCheck({
  db,
  ledger,
  logger,
  metrics,
}: {
  db: Db;
  ledger: UsdtLedger;
  logger: Logger;
  metrics: Metrics;
}): (transfer: TreasuryTransfer, minedNonce: number) => Promise<void> {
  // Alerted on with increase(): the series exists from the start, at 0.
  metrics.treasuryNonceGaps.inc(0);

  /**
   * Whether one of these open transfers (all at one nonce) fills that nonce in the node's pool. One
   * the node no longer has (dropped, a node restart) is broadcast again exactly as signed: never
   * re-signed, since it may still land.
   */
  const fillsNonce = async (transfers: TreasuryTransfer[]): Promise<boolean> => {
    for (const t of transfers) {
      for (const { txHash } of t.attempts) if (await ledger.knowsTransaction(txHash)) return true;
    }
    for (const t of transfers) {
      const { txHash, rawTransaction } = latestAttempt(t);
      try {
        await ledger.broadcast(rawTransaction);
      } catch (err) {
        logger.warn(
          { payoutId: t.payoutId, nonce: t.nonce, txHash, err },
          'treasury transfer not rebroadcast',
        );
        continue;
      }
      logger.warn(
        { event: 'treasury_transfer_rebroadcast', payoutId: t.payoutId, nonce: t.nonce, txHash },
        'treasury transfer missing from the pool below another: broadcast again as signed',
      );
      return true;
    }
    return false;
  };

  /**
   * A transaction is mined only once every nonce below it is. Nonces from the chain's count up to
   * ours that no transaction the node holds fills are a gap: ours waits behind it for ever. Our own
   * open transfers at those nonces are broadcast again (fillsNonce); the nonces still empty are
   * logged, counted (alert TreasuryNonceGap) and thrown as TreasuryNonceGap, naming them, for the
   * workflow's attention item. Ours is never signed again at another nonce: it may still land.
   */
  return async (transfer: TreasuryTransfer, minedNonce: number): Promise<void> => {
    if (minedNonce >= transfer.nonce) return;
    const account = transfer.fromAddress as Address;
    // The pool's count covers every nonce its transactions fill without a hole.
    const pendingNonce = await ledger.nextNonce(account);
    if (pendingNonce > transfer.nonce) return;
    const from = Math.max(minedNonce, pendingNonce);
    const scanned = Math.min(transfer.nonce - from, GAP_SCAN_LIMIT);
    const below = Array.from({ length: scanned }, (_, i) => from + i);
    const ours = await findOpenTreasuryTransfersAt(db, transfer, below);
    const gap: number[] = [];
    for (const nonce of below)
      if (!(await fillsNonce(ours.filter((t) => t.nonce === nonce)))) gap.push(nonce);
    if (gap.length === 0) return;
    const unscanned = transfer.nonce - from - scanned;
    const message =
      `treasury transfer at nonce ${transfer.nonce} of ${account} waits behind a nonce gap: ` +
      `nonce(s) ${gap.join(', ')} in no transaction the node holds (chain count ${minedNonce})` +
      (unscanned > 0 ? `; ${unscanned} nonce(s) further below ours not checked` : '');
    metrics.treasuryNonceGaps.inc();
    logger.error(
      {
        event: 'treasury_nonce_gap',
        payoutId: transfer.payoutId,
        account,
        nonce: transfer.nonce,
        gap,
        minedNonce,
        pendingNonce,
        txHash: latestAttempt(transfer).txHash,
      },
      message,
    );
    throw ApplicationFailure.retryable(message, 'TreasuryNonceGap', { nonces: gap });
  };
}
