import { ApplicationFailure } from '@temporalio/activity';
import type { UsdtLedger } from '../adapters/chain/ledger-types';
import type { Logger } from '../observability/logger';
import { notYetConfirmed, revertNotFinal, type TransferProof } from './transfer-proof';

/** Provider settlement mode: the check of a USDT transfer the provider reported for a payout. */
export function createTransferVerificationActivities({
  ledger,
  logger,
  proof: { claimedFor, transferMismatch },
}: {
  ledger: UsdtLedger;
  logger: Logger;
  proof: TransferProof;
}) {
  return {
    /**
     * Confirmed (and claimed for the payout) or reverted (in a finalized block). Anything else throws
     * retryably: a transfer not yet mined, short of confirmations or reverted above the finalized
     * block (NotYetConfirmed), and a mined transaction that does not
     * pay the payout (TransferMismatch, alerted: an operator decides).
     */
    async verifyUsdtTransfer(req: {
      /** The payout the transfer is claimed for once confirmed (absent in attempts scheduled by older runs). */
      payoutId?: string;
      txHash: `0x${string}`;
      to: string;
      amountUnits: string;
      minConfirmations: number;
    }): Promise<'confirmed' | 'reverted'> {
      // Chain errors stay retryable, config ones included: they are ours to fix, and the workflow's
      // settlement deadline bounds the retries. Failing fast would fail payouts already paid.
      const check = await ledger.verifyTransfer({
        txHash: req.txHash,
        to: req.to as `0x${string}`,
        amountUnits: BigInt(req.amountUnits),
        minConfirmations: req.minConfirmations,
      });
      switch (check.status) {
        case 'confirmed':
          if (req.payoutId === undefined) {
            // Scheduled by a workflow run from before transfers were claimed; nothing to claim for.
            logger.warn({ txHash: req.txHash }, 'settlement transfer confirmed without a claim (older run)');
            return 'confirmed';
          }
          return claimedFor(req.payoutId, 'settlement', req.txHash, check.logIndexes);
        case 'reverted':
          // Only a final revert proves nothing moved: before, a reorganisation may mine it again.
          if (!check.final) throw revertNotFinal(req.txHash);
          return 'reverted';
        case 'mismatch':
          return transferMismatch({
            payoutId: req.payoutId,
            kind: 'settlement',
            txHash: req.txHash,
            reason: 'no_matching_transfer',
            detail: check.reason,
          });
        case 'pending':
          throw notYetConfirmed(check.confirmations);
        case 'not_found':
          throw ApplicationFailure.retryable('transfer not yet known to the node', 'NotYetConfirmed');
      }
    },
  };
}
