import { ApplicationFailure } from '@temporalio/activity';
import type { Address } from 'viem';
import { ChainError } from '../adapters/chain/chain-error';
import { SENDER_PROBLEMS, type SenderProblem, type UsdtLedger } from '../adapters/chain/ledger-types';
import { maxGasCostOf } from '../adapters/chain/treasury-signing';
import type { Db } from '../adapters/db/pool';
import { claimOneOf, recordTransferMismatch, type MismatchReason } from '../adapters/db/transfer-claims-repo';
import {
  addTreasuryTransferAttempt,
  closeTreasuryRound,
  findTreasuryTransfer,
  getOrCreateTreasuryTransfer,
  recordMinedTreasuryTransfer,
  type TreasuryTransfer,
} from '../adapters/db/treasury-transfers-repo';
import type { Logger } from '../observability/logger';
import {
  ScreeningUnavailableError,
  type ReceiverScreening,
  type ScreeningVerdict,
} from '../domain/screening';
import type { Metrics } from '../observability/metrics';
import { CHAIN_REJECTED } from './failure-types';
import { createNonceGapCheck } from './treasury-nonce-gap';
import type { PaymentHoldCheck } from './payment-hold';

export interface ChainActivityDeps {
  db: Db;
  ledger: UsdtLedger;
  logger: Logger;
  metrics: Metrics;
  /** The receiver screened right before a treasury transfer is signed (docs/decisions.md D45). */
  screening: ReceiverScreening;
  /**
   * How a treasury nonce conflict is proven: this many receipt lookups by hash, this far apart, must
   * all find nothing (a load-balanced RPC may answer from a node that lags). Default 3, 2 s apart.
   */
  nonceConflictProof?: { receiptLookups: number; spacingMs: number };
  /**
   * How long a treasury transaction may wait unmined before it is signed again at the same nonce with
   * higher fees (TREASURY_REPRICE_AFTER_SECONDS). Default 120.
   */
  treasuryRepriceAfterSeconds?: number;
  /**
   * Reads the settling payment again right before a treasury transfer is signed, where the PIX provider
   * reports returns it did not make on our behalf (API Pix devoluções); absent, no such read.
   */
  paymentHold?: PaymentHoldCheck;
}

const MISMATCH_REASONS: readonly MismatchReason[] = ['no_matching_transfer', 'claimed_by_other'];

/**
 * The chain and the treasury: verify a reported USDT transfer, send and confirm the treasury's own.
 * A confirmed transfer is claimed for its payout, so one transfer settles at most one payout.
 */
export function createChainActivities({
  db,
  ledger,
  logger,
  metrics,
  screening,
  nonceConflictProof = { receiptLookups: 3, spacingMs: 2_000 },
  treasuryRepriceAfterSeconds = 120,
  paymentHold,
}: ChainActivityDeps) {
  // Alerted on with increase(): every reason's series exists from the start, at 0.
  for (const reason of MISMATCH_REASONS) metrics.transferMismatches.inc({ reason }, 0);
  for (const reason of SENDER_PROBLEMS) metrics.treasuryCannotSend.inc({ reason }, 0);
  const reportNonceGap = createNonceGapCheck({ db, ledger, logger, metrics });

  /**
   * Likewise for the chain, used before anything is signed: no USDT in the treasury, a transfer that
   * would revert or a misconfigured chain will not heal, and nothing can land yet.
   */
  const fromChainError = (err: unknown): never => {
    if (err instanceof ChainError && !err.retryable) {
      throw ApplicationFailure.nonRetryable(err.message, CHAIN_REJECTED);
    }
    throw err;
  };

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
   * A treasury the token's issuer blocked (or that cannot send at all) is the operator's problem, as
   * an empty one is: the payout waits, retrying, with the alert TreasuryBlocked, and goes on by itself
   * once the block is lifted or the treasury key is rotated. Never FAILED, never a refund case.
   */
  const cannotSend = (payoutId: string, problem: { reason: SenderProblem; detail: string }): never => {
    metrics.treasuryCannotSend.inc({ reason: problem.reason });
    logger.error(
      { event: 'treasury_cannot_send', payoutId, reason: problem.reason, detail: problem.detail },
      'treasury cannot send USDT: the payout waits until it can (block lifted or key rotated)',
    );
    throw ApplicationFailure.retryable(
      `treasury cannot send (${problem.reason}): ${problem.detail}`,
      'TreasuryCannotSend',
      { reason: problem.reason },
    );
  };

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

  /** The transaction to (re)broadcast: the latest signed, whose fees are the highest. */
  const latestAttempt = (transfer: TreasuryTransfer) => transfer.attempts.at(-1)!;

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
        throw ApplicationFailure.nonRetryable(err.message, CHAIN_REJECTED);
      }
      throw ApplicationFailure.retryable(err instanceof Error ? err.message : String(err), 'BroadcastFailed');
    }
    logger.info(
      { payoutId: transfer.payoutId, txHash: latest.txHash, attempt: latest.attempt, nonce: transfer.nonce },
      'treasury transfer broadcast',
    );
  };

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
  ): Promise<{ status: 'reverted_by_sender'; txHash: `0x${string}` }> => {
    if (confirmations < minConfirmations) throw notYetConfirmed(confirmations);
    // Closing the round lets a new one be signed at the next nonce. A revert that a reorg undid could
    // then run again, after the block is lifted, and succeed beside the new round: paid twice. So the
    // round closes only once the revert is final (the account's finalized nonce is past it).
    if ((await ledger.finalizedNonce(transfer.fromAddress as Address)) <= transfer.nonce) {
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
    return { status: 'reverted_by_sender', txHash };
  };

  /** Mined but short of its confirmations: Temporal retries the check. */
  const notYetConfirmed = (confirmations: number) =>
    ApplicationFailure.retryable(`transfer has ${confirmations} confirmation(s)`, 'NotYetConfirmed');

  return {
    /**
     * Confirmed (and claimed for the payout) or reverted. Anything else throws retryably: a transfer
     * not yet mined or short of confirmations (NotYetConfirmed), and a mined transaction that does not
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
    /**
     * Treasury mode: sign once (persisted before broadcast), then (re)broadcast that same transaction
     * (or its latest re-priced replacement, see confirmTreasuryTransfer). A refusal before signing (a
     * transfer that would revert) is final and nothing can land, unless the treasury is why
     * (TreasuryCannotSend: blocked by the token's issuer, or unable to send at all); that, and a
     * treasury short of USDT or gas for this transfer plus every one signed and not yet mined, fail
     * retryably with their alert. After signing, only the proof that the nonce went to another
     * transaction is final: anything else is retried, since abandoning a signed transaction would leave
     * a nonce gap that stalls every later treasury transfer. Once the payout's round was closed (see
     * confirmTreasuryTransfer), a new round is signed at a new nonce. Returns the hash of the
     * transaction broadcast.
     */
    /** Whether a treasury transfer is signed for the payout and not proven reverted: it may still land. */
    async hasOpenTreasuryTransfer(req: { payoutId: string }): Promise<boolean> {
      const transfer = await findTreasuryTransfer(db, req.payoutId);
      return transfer !== null && transfer.revertedAt === null;
    },
    async sendTreasuryTransfer(req: {
      payoutId: string;
      to: string;
      amountUnits: string;
      /** An operator released the payout after screening flagged its receiver: sign without screening. */
      released?: boolean;
      /** The payment this transfer pays for, read again before signing (paymentHold). */
      chargeId?: string;
      paymentEventId?: string;
    }): Promise<{ txHash: `0x${string}` } | { flagged: Extract<ScreeningVerdict, { kind: 'flagged' }> }> {
      // A transfer already signed for the payout (its open round) is only re-sent: nothing about this
      // worker (its treasury key, its balance) may refuse it then, since a refusal is taken as proof
      // that nothing was signed. A closed round (mined, reverted) is followed by a new one.
      const signedBefore = await findTreasuryTransfer(db, req.payoutId);
      if (signedBefore !== null && signedBefore.revertedAt === null) {
        await broadcastTreasuryTransfer(signedBefore);
        return { txHash: latestAttempt(signedBefore).txHash };
      }
      // Right before signing, however long this payout waited for the treasury: a receiver listed
      // meanwhile is not paid (the payout waits for an operator), an unreadable source is retried.
      if (!req.released) {
        const verdict = await screening.screen(req.to).catch((err: unknown) => {
          if (!(err instanceof ScreeningUnavailableError)) throw err;
          logger.warn(
            { event: 'screening_unreadable', payoutId: req.payoutId, sources: err.sources },
            err.message,
          );
          throw ApplicationFailure.retryable(err.message, 'ScreeningUnavailable');
        });
        if (verdict.kind === 'flagged') {
          logger.error(
            {
              event: 'receiver_flagged',
              payoutId: req.payoutId,
              source: verdict.source,
              detail: verdict.detail,
            },
            'receiver flagged by screening right before the treasury transfer was signed: nothing signed',
          );
          return { flagged: verdict };
        }
      }
      if (paymentHold) {
        // Configured, the read is never skipped: a request without its payment signs nothing.
        if (req.chargeId === undefined || req.paymentEventId === undefined) {
          throw ApplicationFailure.retryable(
            'treasury transfer asked without the payment it pays for: nothing signed',
            'ChargeStatusUnreadable',
          );
        }
        await paymentHold({
          payoutId: req.payoutId,
          chargeId: req.chargeId,
          paymentEventId: req.paymentEventId,
        });
      }
      const treasury = treasuryAddressOf(ledger);
      const transfer = await getOrCreateTreasuryTransfer(
        db,
        {
          payoutId: req.payoutId,
          toAddress: req.to,
          amountUnits: BigInt(req.amountUnits),
          chainId: ledger.chainId,
          fromAddress: treasury,
        },
        () => ledger.nextNonce(),
        async (nonce, signed) => {
          // Transfers signed and not yet mined have not left the balance yet but still may: their USDT
          // and their gas at its cap (the highest of their attempts) are reserved. The mined nonce is
          // read before the balances, so a transfer mined in between is counted twice, never missed.
          const unmined = await signed.fromNonce(await ledger.minedNonce());
          const reserved = { usdtUnits: 0n, gasWei: 0n };
          for (const t of unmined) {
            reserved.usdtUnits += t.amountUnits;
            reserved.gasWei += t.attempts
              .map((a) => maxGasCostOf(a.rawTransaction))
              .reduce((a, b) => (a > b ? a : b), 0n);
          }
          return ledger.signTransfer({
            to: req.to as `0x${string}`,
            amountUnits: BigInt(req.amountUnits),
            nonce,
            reserved,
          });
        },
      ).catch(async (err: unknown) => {
        if (err instanceof ChainError && err.kind === 'insufficient_funds')
          insufficientFunds(req.payoutId, err);
        if (err instanceof ChainError && err.kind === 'reverted') {
          // The simulation refused: the treasury's fault waits, a refusal of this transfer is final.
          const health = await ledger.senderHealth(treasury);
          if (!health.ok) cannotSend(req.payoutId, health);
        }
        return fromChainError(err);
      });
      await broadcastTreasuryTransfer(transfer);
      return { txHash: latestAttempt(transfer).txHash };
    },
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
     */
    async confirmTreasuryTransfer(req: {
      payoutId: string;
      to: string;
      amountUnits: string;
      minConfirmations: number;
    }): Promise<{ status: 'confirmed' | 'reverted' | 'reverted_by_sender'; txHash: `0x${string}` }> {
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
        return { status: 'reverted_by_sender', txHash: transfer.minedTxHash! };
      }
      let latestKnown = false;
      // Newest first: a replacement is the likelier one to be mined. At most one of them can be.
      for (const attempt of [...transfer.attempts].reverse()) {
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
            return {
              status: await claimedFor(req.payoutId, 'treasury', attempt.txHash, check.logIndexes),
              txHash: attempt.txHash,
            };
          case 'reverted': {
            const amountUnits = BigInt(req.amountUnits);
            const problem = await senderProblem(transfer.fromAddress as Address, amountUnits);
            // Not the treasury's doing: proof that no USDT moved, and none will (FAILED).
            if (!problem) return { status: 'reverted', txHash: attempt.txHash };
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
              treasuryRepriceAfterSeconds,
              async (latest) => {
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
      if (repriced) {
        metrics.treasuryTransfersRepriced.inc();
        await broadcastTreasuryTransfer(repriced);
        throw ApplicationFailure.retryable('treasury transfer re-priced and broadcast', 'NotYetConfirmed');
      }
      if (!latestKnown) {
        await broadcastTreasuryTransfer(transfer);
        throw ApplicationFailure.retryable('treasury transfer broadcast again', 'NotYetConfirmed');
      }
      await reportNonceGap(transfer, minedNonce);
      throw notYetConfirmed(0);
    },
  };
}

function treasuryAddressOf(ledger: UsdtLedger): Address {
  const address = ledger.treasuryAddress();
  if (!address) {
    throw ApplicationFailure.nonRetryable('treasury mode needs TREASURY_PRIVATE_KEY', CHAIN_REJECTED);
  }
  return address;
}

export type ChainActivities = ReturnType<typeof createChainActivities>;
