import { ApplicationFailure } from '@temporalio/activity';
import type { Address } from 'viem';
import type { SenderProblem, UsdtLedger } from '../adapters/chain/ledger-types';
import type { Db } from '../adapters/db/pool';
import {
  addTreasuryTransferAttempt,
  closeTreasuryRound,
  findTreasuryTransfer,
  recordMinedTreasuryTransfer,
  type TreasuryTransfer,
} from '../adapters/db/treasury-transfers-repo';
import { ScreeningUnavailableError, type ReceiverScreening } from '../domain/screening';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { latestAttempt, type TreasuryBroadcast } from './treasury-broadcast';
import { createNonceGapCheck } from './treasury-nonce-gap';
import { notYetConfirmed, revertNotFinal, type TransferProof } from './transfer-proof';

/**
 * When a treasury transfer waiting unmined is cancelled at its nonce: `if_flagged`, when screening
 * flags its receiver at a re-price's look; `flag_known`, at once (the payout knows of a flag no
 * operator released). Workflow code that passes neither never gets a 'cancelled' answer.
 */
export type CancelIf = 'if_flagged' | 'flag_known';

/**
 * Treasury mode, the confirming side: the payout's stored transfer followed until one of its
 * transactions is mined deep enough, re-priced or broadcast again while none is.
 */
export function createTreasuryConfirmActivities({
  db,
  ledger,
  logger,
  metrics,
  screening,
  treasuryRepriceAfterSeconds,
  proof: { claimedFor, transferMismatch },
  broadcast: { broadcastTreasuryTransfer },
}: {
  db: Db;
  ledger: UsdtLedger;
  logger: Logger;
  metrics: Metrics;
  /** The receiver screened again while its transfer waits unmined: flagged, the transfer is cancelled. */
  screening: ReceiverScreening;
  /** See ChainActivityDeps.treasuryRepriceAfterSeconds. */
  treasuryRepriceAfterSeconds: number;
  proof: TransferProof;
  broadcast: TreasuryBroadcast;
}) {
  const reportNonceGap = createNonceGapCheck({ db, ledger, logger, metrics });

  /**
   * Whether `from`, and not the transfer's receiver or amount, is why a transfer of `amountUnits`
   * reverts: the issuer blocked it, every transfer from it reverts, or it now holds less than the
   * amount (an empty treasury). Undefined when it could send that transfer now.
   */
  const senderProblem = async (
    from: Address,
    amountUnits: bigint,
  ): Promise<{ reason: SenderProblem | 'insufficient_funds'; detail: string } | undefined> => {
    const health = await ledger.senderHealth(from);
    if (!health.ok) return health;
    const balance = await ledger.balanceOf(from);
    if (balance < amountUnits) {
      return {
        reason: 'insufficient_funds',
        detail: `${from} holds ${balance} USDT units, less than the ${amountUnits} sent`,
      };
    }
    return undefined;
  };

  /** Whether the account's finalized nonce is past the round's: whatever holds that nonce is final. */
  const nonceFinalized = async (transfer: TreasuryTransfer) =>
    (await ledger.finalizedNonce(transfer.fromAddress as Address)) > transfer.nonce;

  /**
   * The round's transaction was mined and reverted, and the treasury is why: no USDT moved and the
   * nonce is used up, so nothing of this round can land any more. Once the revert is as deep as a
   * success would have to be, the round is closed: the payout sends again, at a new nonce, when the
   * treasury can (until then its send waits, alerted).
   */
  const revertedBySender = async (
    transfer: TreasuryTransfer,
    txHash: `0x${string}`,
    confirmations: number,
    minConfirmations: number,
    problem: { reason: SenderProblem | 'insufficient_funds'; detail: string },
  ): Promise<{ status: 'reverted_by_sender'; txHash: `0x${string}`; round: number }> => {
    if (confirmations < minConfirmations) throw notYetConfirmed(confirmations);
    // Closing the round lets a new one be signed at the next nonce. A revert that a reorg undid could
    // then run again, after the block is lifted, and succeed beside the new round: paid twice. So the
    // round closes only once the revert is final (the account's finalized nonce is past it).
    if (!(await nonceFinalized(transfer))) {
      throw ApplicationFailure.retryable(
        `treasury transfer ${txHash} reverted; its round closes once the revert is finalized`,
        'NotYetConfirmed',
      );
    }
    if (await closeTreasuryRound(db, transfer.payoutId, transfer.round, txHash)) {
      if (problem.reason === 'insufficient_funds') metrics.treasuryInsufficientFunds.inc();
      else metrics.treasuryCannotSend.inc({ reason: problem.reason });
      logger.error(
        {
          event: 'treasury_transfer_reverted_by_sender',
          payoutId: transfer.payoutId,
          txHash,
          nonce: transfer.nonce,
          round: transfer.round,
          reason: problem.reason,
          detail: problem.detail,
        },
        'treasury transfer mined and reverted, the treasury unable to send: the payout sends again once it can',
      );
    }
    return { status: 'reverted_by_sender', txHash, round: transfer.round };
  };

  /**
   * Whether the receiver is flagged now, for a transfer that has waited unmined: only when the workflow
   * asks (`cancel`; never for a payout an operator released, nor for workflow code that knows no
   * 'cancelled'), and at once when it already knows of a flag. A source that cannot be read is no
   * flag: the transfer was screened right before it was signed.
   */
  const flaggedWhileUnmined = async (req: { payoutId: string; to: string; cancel?: CancelIf }) => {
    if (req.cancel === undefined) return false;
    if (req.cancel === 'flag_known') return true;
    let verdict;
    try {
      verdict = await screening.screen(req.to);
    } catch (err) {
      if (!(err instanceof ScreeningUnavailableError)) throw err;
      logger.warn({ event: 'screening_unreadable', payoutId: req.payoutId }, err.message);
      return false;
    }
    if (verdict.kind !== 'flagged') return false;
    logger.error(
      { event: 'receiver_flagged', payoutId: req.payoutId, source: verdict.source, detail: verdict.detail },
      'receiver flagged while its treasury transfer waited unmined: a cancel is signed at its nonce',
    );
    return true;
  };

  /**
   * The round has a cancel (its receiver was flagged while it waited unmined) and none of its transfers
   * is mined: the cancel is followed. Mined and final (no transfer of the round holds the nonce), it is
   * proof that nothing moved: 'cancelled'. Until then the step waits (TreasuryTransferCancelling), the
   * cancel broadcast again while the node does not know it. Final: its own block at or below the chain's
   * finalized one, and canonical, with no receipt for any transfer of the round.
   */
  const followCancel = async (
    req: { cancel?: CancelIf },
    transfer: TreasuryTransfer,
  ): Promise<{ status: 'cancelled'; txHash: `0x${string}`; round: number }> => {
    const transfers = transfer.attempts.filter((a) => !a.cancels);
    // Newest first, as for the transfer: a re-priced cancel is the likelier one to be mined.
    for (const cancel of transfer.attempts.filter((a) => a.cancels).reverse()) {
      const mined = await ledger.receiptFinality(cancel.txHash);
      if (mined === 'none') continue;
      await recordMinedTreasuryTransfer(db, transfer.payoutId, transfer.round, cancel.txHash);
      const transferMined = await Promise.all(transfers.map((a) => ledger.hasReceipt(a.txHash)));
      if (mined === 'final' && (await nonceFinalized(transfer)) && !transferMined.includes(true)) {
        logger.warn(
          { event: 'treasury_transfer_cancelled', payoutId: transfer.payoutId, txHash: cancel.txHash },
          'treasury transfer cancelled at its nonce (its receiver was flagged): no USDT moved',
        );
        return cancelledAnswer(req, transfer, cancel.txHash);
      }
      throw ApplicationFailure.retryable(
        `treasury transfer's cancel ${cancel.txHash} mined; proof once its block is final`,
        'TreasuryTransferCancelling',
      );
    }
    // None mined: raised like a transfer once it has waited and the network asks more (only the key
    // that signed the transfer can), else sent again while the node does not know it.
    const raised =
      transfer.fromAddress === ledger.treasuryAddress()?.toLowerCase()
        ? await addTreasuryTransferAttempt(
            db,
            transfer.payoutId,
            treasuryRepriceAfterSeconds,
            async (latest) => {
              // Only over the cancel this call read: a round closed and another opened since is not this one.
              if (!latest.cancels || latest.txHash !== latestAttempt(transfer).txHash) return null;
              const next = await ledger.signCancel(transfers.at(-1)!.rawTransaction, latest.rawTransaction);
              return next && { ...next, cancels: true };
            },
          )
        : null;
    // Read again unless just raised: a newer cancel stored by another attempt is the one to send.
    const reread = raised ?? (await findTreasuryTransfer(db, transfer.payoutId));
    const current = reread !== null && reread.round === transfer.round ? reread : transfer;
    const latest = latestAttempt(current);
    if (raised !== null || !(await ledger.knowsTransaction(latest.txHash))) {
      await broadcastTreasuryTransfer(current);
    }
    throw ApplicationFailure.retryable(
      `receiver flagged while its treasury transfer waited unmined: cancel ${latest.txHash} signed at nonce ${transfer.nonce}; whichever is mined decides`,
      'TreasuryTransferCancelling',
    );
  };

  /**
   * 'cancelled', to workflow code that asked for cancels; code that did not (a run moved to an older
   * build) would take it for a revert by the treasury and send again: it waits instead.
   */
  const cancelledAnswer = (req: { cancel?: CancelIf }, transfer: TreasuryTransfer, txHash: `0x${string}`) => {
    if (req.cancel === undefined) {
      throw ApplicationFailure.retryable(
        `treasury transfer of payout ${transfer.payoutId} was cancelled (${txHash}): the payout's workflow code does not know cancels`,
        'TreasuryTransferCancelling',
      );
    }
    return { status: 'cancelled' as const, txHash, round: transfer.round };
  };

  return {
    /**
     * Confirmed or reverted for the payout's stored treasury transfer, whichever of its transactions
     * (the first or a re-priced replacement, same nonce) was mined. A revert the treasury caused (see
     * senderProblem) is no end: once as deep as a success must be, the round is closed and the answer
     * is reverted_by_sender, for the payout to send again. Not mined yet: once the latest has
     * waited TREASURY_REPRICE_AFTER_SECONDS and the network asks more than it offers, a replacement is
     * signed, stored, then broadcast; a transaction the node no longer knows (dropped from the pool, a
     * node restart) is broadcast again; one waiting behind a nonce gap throws TreasuryNonceGap
     * (alerted, naming the nonces); either way it throws, so Temporal retries until one lands. A
     * mined transaction that does not pay the payout throws TransferMismatch (retryable, alerted).
     * A receiver flagged while its transfer waits unmined (screened when a re-price would be due) gets
     * a cancel at the transfer's nonce instead (followCancel): 'cancelled' once it is mined and final.
     */
    async confirmTreasuryTransfer(req: {
      payoutId: string;
      to: string;
      amountUnits: string;
      minConfirmations: number;
      /** When the transfer is cancelled while it waits unmined (CancelIf); absent, never. */
      cancel?: CancelIf;
    }): Promise<{
      status: 'confirmed' | 'reverted' | 'reverted_by_sender' | 'cancelled';
      txHash: `0x${string}`;
      /** The round the answer is about: a 'reverted' one is closed by the payout as unable to land. */
      round: number;
    }> {
      const transfer = await findTreasuryTransfer(db, req.payoutId);
      if (transfer === null) {
        // sendTreasuryTransfer returned its hash, so the row existed: a database that lost it (a
        // failover) is a fault to fix, not proof that nothing was sent. Retried, loudly.
        logger.error({ payoutId: req.payoutId }, 'treasury transfer row missing after it was sent');
        throw ApplicationFailure.retryable(
          `no treasury transfer stored for payout ${req.payoutId}`,
          'TreasuryTransferMissing',
        );
      }
      if (transfer.revertedAt !== null) {
        // Closed by an earlier attempt whose answer was lost: the same answer.
        return { status: 'reverted_by_sender', txHash: transfer.minedTxHash!, round: transfer.round };
      }
      let latestKnown = false;
      const cancel = transfer.attempts.find((a) => a.cancels);
      // Newest first: a replacement is the likelier one to be mined. At most one of them can be. A
      // cancel pays nobody: it is followed once no transfer of the round is mined.
      for (const attempt of [...transfer.attempts].reverse()) {
        if (attempt.cancels) continue;
        const check = await ledger.verifyTransfer({
          txHash: attempt.txHash,
          to: req.to as `0x${string}`,
          amountUnits: BigInt(req.amountUnits),
          minConfirmations: req.minConfirmations,
        });
        if (check.status === 'not_found') continue;
        if (check.status === 'pending' && !check.mined) {
          if (attempt === latestAttempt(transfer)) latestKnown = true;
          continue;
        }
        await recordMinedTreasuryTransfer(db, req.payoutId, transfer.round, attempt.txHash);
        switch (check.status) {
          // The hash that was mined, which after a re-price is not the one first signed.
          case 'confirmed':
            if (cancel) {
              logger.error(
                { event: 'treasury_cancel_too_late', payoutId: req.payoutId, txHash: attempt.txHash },
                'treasury transfer to a receiver flagged while it waited was mined before its cancel',
              );
            }
            return {
              status: await claimedFor(req.payoutId, 'treasury', attempt.txHash, check.logIndexes),
              txHash: attempt.txHash,
              round: transfer.round,
            };
          case 'reverted': {
            const amountUnits = BigInt(req.amountUnits);
            const problem = await senderProblem(transfer.fromAddress as Address, amountUnits);
            // Not the treasury's doing: proof that no USDT moved, and none will (FAILED), once final
            // (before, a reorganisation may run it again where it succeeds). The treasury's own
            // revert waits for finality in revertedBySender.
            if (!problem) {
              if (!check.final) throw revertNotFinal(attempt.txHash);
              return { status: 'reverted', txHash: attempt.txHash, round: transfer.round };
            }
            // Its receiver was flagged (a cancel is signed): reverted by the treasury's fault, it moved
            // nothing either, and nothing is sent again to that receiver. As if the cancel had landed.
            if (cancel) {
              if (!check.final || !(await nonceFinalized(transfer))) throw revertNotFinal(attempt.txHash);
              return cancelledAnswer(req, transfer, attempt.txHash);
            }
            return revertedBySender(
              transfer,
              attempt.txHash,
              check.confirmations,
              req.minConfirmations,
              problem,
            );
          }
          case 'mismatch':
            return transferMismatch({
              payoutId: req.payoutId,
              kind: 'treasury',
              txHash: attempt.txHash,
              reason: 'no_matching_transfer',
              detail: check.reason,
            });
          case 'pending':
            throw notYetConfirmed(check.confirmations);
        }
      }

      if (cancel) return followCancel(req, transfer);
      // None mined. A nonce the chain is already past (with none of our receipts) was taken by another
      // transaction or the node lags: a replacement cannot land either, so only the broadcast below
      // runs, which proves the conflict or retries. A transfer signed by a treasury key rotated out
      // since is never re-priced: only that key could sign its replacement.
      const minedNonce = await ledger.minedNonce(transfer.fromAddress as Address);
      const repriced =
        minedNonce > transfer.nonce || transfer.fromAddress !== ledger.treasuryAddress()?.toLowerCase()
          ? null
          : await addTreasuryTransferAttempt(
              db,
              req.payoutId,
              // A flag the payout already knows of cancels at once; another waits for the re-price's look.
              req.cancel === 'flag_known' ? 0 : treasuryRepriceAfterSeconds,
              async (latest) => {
                if (latest.cancels) return null;
                if (await flaggedWhileUnmined(req)) {
                  const cancelling = await ledger.signCancel(latest.rawTransaction);
                  return cancelling && { ...cancelling, cancels: true };
                }
                const replacement = await ledger.signReplacement(latest.rawTransaction);
                if (replacement) {
                  logger.warn(
                    {
                      event: 'treasury_transfer_repriced',
                      payoutId: req.payoutId,
                      nonce: transfer.nonce,
                      replaces: latest.txHash,
                      txHash: replacement.txHash,
                      fees: {
                        old: String(replacement.fees.old.maxFeePerGas),
                        new: String(replacement.fees.new.maxFeePerGas),
                      },
                    },
                    'treasury transfer unmined: signed again at the same nonce with higher fees',
                  );
                }
                return replacement;
              },
            );
      if (repriced && latestAttempt(repriced).cancels) {
        await broadcastTreasuryTransfer(repriced);
        return followCancel(req, repriced);
      }
      if (repriced) {
        metrics.treasuryTransfersRepriced.inc();
        await broadcastTreasuryTransfer(repriced);
        throw ApplicationFailure.retryable('treasury transfer re-priced and broadcast', 'NotYetConfirmed');
      }
      // An attempt that read the round before another stored its cancel follows the cancel.
      const now = await findTreasuryTransfer(db, req.payoutId);
      const storedCancel = now?.round === transfer.round ? now.attempts.find((a) => a.cancels) : undefined;
      if (now && storedCancel) return followCancel(req, now);
      // A transfer to a receiver the payout knows is flagged is never helped to land: nothing re-sent.
      if (!latestKnown && req.cancel !== 'flag_known') {
        await broadcastTreasuryTransfer(transfer);
        throw ApplicationFailure.retryable('treasury transfer broadcast again', 'NotYetConfirmed');
      }
      await reportNonceGap(transfer, minedNonce);
      throw notYetConfirmed(0);
    },
  };
}
