import { ApplicationFailure } from '@temporalio/activity';
import type { Address } from 'viem';
import { ChainError } from '../adapters/chain/chain-error';
import type { UsdtLedger } from '../adapters/chain/ledger-types';
import type { TreasuryTransfer } from '../adapters/db/treasury-transfers-repo';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { CHAIN_REJECTED } from './failure-types';

/** The transaction to (re)broadcast: the latest signed, whose fees are the highest. */
export const latestAttempt = (transfer: TreasuryTransfer) => transfer.attempts.at(-1)!;

export type TreasuryBroadcast = ReturnType<typeof createTreasuryBroadcast>;

/**
 * Broadcasting the treasury's signed transfers, for sending and confirming alike: a broadcast is
 * retried whatever goes wrong, except on proof that the transfer's nonce went to another transaction.
 */
export function createTreasuryBroadcast({
  ledger,
  logger,
  metrics,
  nonceConflictProof,
}: {
  ledger: UsdtLedger;
  logger: Logger;
  metrics: Metrics;
  /** See ChainActivityDeps.nonceConflictProof. */
  nonceConflictProof: { receiptLookups: number; spacingMs: number };
}) {
  /**
   * An empty treasury is an operator's problem to fix, not the payout's end: the attempt fails
   * retryably (Temporal retries until the treasury is topped up) and raises the alert.
   */
  const insufficientFunds = (payoutId: string, err: ChainError): never => {
    metrics.treasuryInsufficientFunds.inc();
    logger.error(
      { event: 'treasury_insufficient_funds', payoutId, err: err.message },
      'treasury lacks USDT or gas for a payout: top it up; the transfer is retried until then',
    );
    throw ApplicationFailure.retryable(err.message, 'TreasuryInsufficientFunds');
  };

  /**
   * A node answering "nonce too low" is not proof that our transaction can never land: a lagging or
   * load-balanced RPC may not know it yet. Proof is the finalized nonce past ours while repeated
   * receipt lookups find nothing for any of the transactions signed for that nonce (the first or a
   * re-priced one: whichever was mined took the nonce, and then it is ours).
   */
  const nonceProvenTaken = async (transfer: TreasuryTransfer): Promise<boolean> => {
    if ((await ledger.finalizedNonce(transfer.fromAddress as Address)) <= transfer.nonce) return false;
    for (let lookup = 0; lookup < nonceConflictProof.receiptLookups; lookup++) {
      if (lookup > 0) await new Promise((r) => setTimeout(r, nonceConflictProof.spacingMs));
      for (const { txHash } of transfer.attempts) if (await ledger.hasReceipt(txHash)) return false;
    }
    return true;
  };

  const broadcastTreasuryTransfer = async (transfer: TreasuryTransfer): Promise<void> => {
    const latest = latestAttempt(transfer);
    try {
      // Re-sending the stored transaction is idempotent: a known or mined one counts as sent.
      await ledger.broadcast(latest.rawTransaction);
    } catch (err) {
      if (err instanceof ChainError && err.kind === 'insufficient_funds')
        insufficientFunds(transfer.payoutId, err);
      if (err instanceof ChainError && err.kind === 'nonce_conflict' && (await nonceProvenTaken(transfer))) {
        logger.error(
          {
            payoutId: transfer.payoutId,
            txHashes: transfer.attempts.map((a) => a.txHash),
            nonce: transfer.nonce,
          },
          'treasury nonce used by another transaction: this transfer can never be mined',
        );
        // The round is named: the payout closes it, and only it, as unable to land.
        throw ApplicationFailure.nonRetryable(err.message, CHAIN_REJECTED, { round: transfer.round });
      }
      throw ApplicationFailure.retryable(err instanceof Error ? err.message : String(err), 'BroadcastFailed');
    }
    logger.info(
      { payoutId: transfer.payoutId, txHash: latest.txHash, attempt: latest.attempt, nonce: transfer.nonce },
      'treasury transfer broadcast',
    );
  };

  return { broadcastTreasuryTransfer, insufficientFunds };
}
