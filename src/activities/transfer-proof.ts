import { ApplicationFailure } from '@temporalio/activity';
import type { UsdtLedger } from '../adapters/chain/ledger-types';
import type { Db } from '../adapters/db/pool';
import { claimOneOf, recordTransferMismatch, type MismatchReason } from '../adapters/db/transfer-claims-repo';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';

const MISMATCH_REASONS: readonly MismatchReason[] = ['no_matching_transfer', 'claimed_by_other'];

/** Mined but short of its confirmations: Temporal retries the check. */
export const notYetConfirmed = (confirmations: number) =>
  ApplicationFailure.retryable(`transfer has ${confirmations} confirmation(s)`, 'NotYetConfirmed');

/** Reverted, but not yet in a finalized block: no proof yet that nothing moved (retried). */
export const revertNotFinal = (txHash: string) =>
  ApplicationFailure.retryable(`transfer ${txHash} reverted, not yet finalized`, 'NotYetConfirmed');

export type TransferProof = ReturnType<typeof createTransferProof>;

/**
 * What makes a mined USDT transfer count for a payout, alike for a transfer the provider reported and
 * for the treasury's own: it is claimed for the payout, so one transfer settles at most one payout, and
 * a transaction that does not pay the payout is a mismatch an operator decides.
 */
export function createTransferProof({
  db,
  ledger,
  logger,
  metrics,
}: {
  db: Db;
  ledger: UsdtLedger;
  logger: Logger;
  metrics: Metrics;
}) {
  // Alerted on with increase(): every reason's series exists from the start, at 0.
  for (const reason of MISMATCH_REASONS) metrics.transferMismatches.inc({ reason }, 0);

  /**
   * A mined transaction that does not pay the payout is not proof that no USDT moved for it (a wrong
   * report, a claim taken by the wrong payout, a bug of ours): the payout is neither completed nor
   * failed. The activity fails retryably, so the payout waits in PROCESSING and keeps looking, and
   * an operator decides. Counted and logged as an error once per payout and transaction (a row in
   * settlement_transfer_mismatches), so the alert counts cases, not retries.
   */
  const transferMismatch = async (m: {
    payoutId: string | undefined;
    kind: 'settlement' | 'treasury';
    txHash: string;
    reason: MismatchReason;
    detail: string;
    claimedBy?: string[];
  }): Promise<never> => {
    // A run scheduled before payouts were named here has no payout to note it for: counted each time.
    const first =
      m.payoutId === undefined
        ? true
        : await recordTransferMismatch(db, {
            payoutId: m.payoutId,
            txHash: m.txHash,
            reason: m.reason,
            detail: m.detail,
          });
    const fields = {
      event: 'transfer_mismatch',
      payoutId: m.payoutId,
      kind: m.kind,
      txHash: m.txHash,
      reason: m.reason,
      detail: m.detail,
      ...(m.claimedBy ? { claimedBy: m.claimedBy } : {}),
    };
    if (first) {
      metrics.transferMismatches.inc({ reason: m.reason });
      if (m.reason === 'claimed_by_other') metrics.transferClaimConflicts.inc();
      logger.error(
        fields,
        `${m.kind} transaction does not pay the payout: it waits in PROCESSING until an operator decides`,
      );
    } else {
      logger.warn(fields, `${m.kind} transaction still does not pay the payout`);
    }
    throw ApplicationFailure.retryable(
      `${m.kind} transfer mismatch (${m.reason}): ${m.detail}`,
      'TransferMismatch',
      {
        txHash: m.txHash,
        reason: m.reason,
      },
    );
  };

  /**
   * A confirmed transfer counts for this payout only once it is claimed for it: one on-chain transfer
   * (log) settles at most one payout. Among the transaction's matching logs the payout takes one no
   * other payout holds (or the one it already holds); all held by others is a mismatch.
   */
  const claimedFor = async (
    payoutId: string,
    kind: 'settlement' | 'treasury',
    txHash: string,
    logIndexes: number[],
  ): Promise<'confirmed'> => {
    const outcome = await claimOneOf(db, { chainId: ledger.chainId, txHash, logIndexes }, payoutId);
    if (outcome.claimed) return 'confirmed';
    return transferMismatch({
      payoutId,
      kind,
      txHash,
      reason: 'claimed_by_other',
      detail: `every matching USDT transfer in ${txHash} (log ${logIndexes.join(', ')}) already settled another payout`,
      claimedBy: outcome.heldBy,
    });
  };

  return { claimedFor, transferMismatch };
}
