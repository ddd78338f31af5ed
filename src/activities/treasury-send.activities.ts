import { ApplicationFailure } from '@temporalio/activity';
import type { Address } from 'viem';
import { ChainError } from '../adapters/chain/chain-error';
import { SENDER_PROBLEMS, type SenderProblem, type UsdtLedger } from '../adapters/chain/ledger-types';
import { maxGasCostOf } from '../adapters/chain/treasury-signing';
import type { Db } from '../adapters/db/pool';
import {
  closeTreasuryRounds,
  findTreasuryTransfer,
  getOrCreateTreasuryTransfer,
  TreasuryClosedError,
} from '../adapters/db/treasury-transfers-repo';
import type { ReceiverScreening, ScreeningVerdict } from '../domain/screening';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { CHAIN_REJECTED } from './failure-types';
import type { PaymentHoldCheck } from './payment-hold';
import { screenBeforeMoneyMoves } from './screening.activities';
import { latestAttempt, type TreasuryBroadcast } from './treasury-broadcast';

/**
 * Treasury mode, the sending side: a transfer signed once per round (screened and its payment read
 * again right before), then broadcast.
 */
export function createTreasurySendActivities({
  db,
  ledger,
  logger,
  metrics,
  screening,
  paymentHold,
  broadcast: { broadcastTreasuryTransfer, insufficientFunds },
}: {
  db: Db;
  ledger: UsdtLedger;
  logger: Logger;
  metrics: Metrics;
  screening: ReceiverScreening;
  paymentHold?: PaymentHoldCheck;
  broadcast: TreasuryBroadcast;
}) {
  // Alerted on with increase(): every reason's series exists from the start, at 0.
  for (const reason of SENDER_PROBLEMS) metrics.treasuryCannotSend.inc({ reason }, 0);

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

  return {
    /** Whether a treasury transfer is signed for the payout and not proven reverted: it may still land. */
    async hasOpenTreasuryTransfer(req: { payoutId: string }): Promise<boolean> {
      const transfer = await findTreasuryTransfer(db, req.payoutId);
      return transfer !== null && transfer.revertedAt === null;
    },
    /**
     * Right before a treasury-mode payout ends FAILED: closes its rounds for good ('closed': nothing is
     * signed and nothing can be any more, not even by an attempt of sendTreasuryTransfer still running
     * on a worker that lost its lease), or answers 'signed': a transfer may still land, so the payout
     * may not fail. Idempotent.
     */
    async closeTreasuryRounds(req: {
      payoutId: string;
      /** This round's transaction is proven unable to land (see the repository). */
      deadRound?: number;
      /** From a workflow that names no round: the open round's transaction is proven unable to land. */
      openRoundCannotLand?: boolean;
    }): Promise<'closed' | 'signed'> {
      const closed = await closeTreasuryRounds(db, req.payoutId, req);
      if (closed === 'signed') {
        logger.warn({ payoutId: req.payoutId }, 'payout not failed: a treasury transfer is signed for it');
      }
      return closed;
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
    async sendTreasuryTransfer(req: {
      payoutId: string;
      to: string;
      amountUnits: string;
      /** An operator released the payout after screening flagged its receiver: sign without screening. */
      released?: boolean;
      /**
       * The receiver was flagged while a transfer was signed, and no operator released it: an open
       * round's transfer is not broadcast again (its cancel is), a new round is never signed
       * (`notSigned`: the operator decides).
       */
      onlyResend?: boolean;
      /** The payment this transfer pays for, read again before signing (paymentHold). */
      chargeId?: string;
      paymentEventId?: string;
    }): Promise<
      | { txHash: `0x${string}` }
      | { flagged: Extract<ScreeningVerdict, { kind: 'flagged' }> }
      | { notSigned: 'receiver_flagged' }
    > {
      // A transfer already signed for the payout (its open round) is only re-sent: nothing about this
      // worker (its treasury key, its balance) may refuse it then, since a refusal is taken as proof
      // that nothing was signed. A closed round (mined, reverted) is followed by a new one.
      const signedBefore = await findTreasuryTransfer(db, req.payoutId);
      if (signedBefore !== null && signedBefore.revertedAt === null) {
        // A transfer to a receiver flagged since is not helped to land: only its cancel is sent again.
        if (!req.onlyResend || latestAttempt(signedBefore).cancels)
          await broadcastTreasuryTransfer(signedBefore);
        return { txHash: latestAttempt(signedBefore).txHash };
      }
      if (req.onlyResend) return { notSigned: 'receiver_flagged' };
      // The payment first: one the payer got back in full ends the payout with nothing to refund, flagged
      // receiver or not.
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
      // Right before signing, however long this payout waited for the treasury: a receiver listed
      // meanwhile is not paid (the payout waits for an operator), an unreadable source is retried.
      if (!req.released) {
        const verdict = await screenBeforeMoneyMoves(
          { screening, logger },
          req.payoutId,
          req.to,
          'right before the treasury transfer was signed (nothing signed)',
        );
        if (verdict.kind === 'flagged') return { flagged: verdict };
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
        if (err instanceof TreasuryClosedError) {
          // The payout failed meanwhile (this is an attempt its workflow no longer waits for).
          logger.warn({ payoutId: req.payoutId }, 'treasury transfer not signed: the payout has failed');
          throw ApplicationFailure.nonRetryable(err.message, 'TreasuryClosed');
        }
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
  };
}

function treasuryAddressOf(ledger: UsdtLedger): Address {
  const address = ledger.treasuryAddress();
  if (!address) {
    throw ApplicationFailure.nonRetryable('treasury mode needs TREASURY_PRIVATE_KEY', CHAIN_REJECTED);
  }
  return address;
}
