import { ApplicationFailure } from '@temporalio/activity';
import { ChainError, type UsdtLedger } from '../adapters/chain/usdt-ledger';
import type { Db } from '../adapters/db/pool';
import { claimTransfer } from '../adapters/db/transfer-claims-repo';
import {
  findTreasuryTransfer,
  getOrCreateTreasuryTransfer,
  type TreasuryTransfer,
} from '../adapters/db/treasury-transfers-repo';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';

export interface ChainActivityDeps {
  db: Db;
  ledger: UsdtLedger;
  logger: Logger;
  metrics: Metrics;
  /**
   * How a treasury nonce conflict is proven: this many receipt lookups by hash, this far apart, must
   * all find nothing (a load-balanced RPC may answer from a node that lags). Default 3, 2 s apart.
   */
  nonceConflictProof?: { receiptLookups: number; spacingMs: number };
}

/**
 * The chain and the treasury: verify a reported USDT transfer, send and confirm the treasury's own.
 * A confirmed transfer is claimed for its payout, so one transfer settles at most one payout.
 */
export function createChainActivities({
  db,
  ledger,
  logger,
  metrics,
  nonceConflictProof = { receiptLookups: 3, spacingMs: 2_000 },
}: ChainActivityDeps) {
  /**
   * Likewise for the chain, used before anything is signed: no USDT in the treasury, a transfer that
   * would revert or a misconfigured chain will not heal, and nothing can land yet.
   */
  const fromChainError = (err: unknown): never => {
    if (err instanceof ChainError && !err.retryable) {
      throw ApplicationFailure.nonRetryable(err.message, 'ChainRejected');
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
   * A node answering "nonce too low" is not proof that our transaction can never land: a lagging or
   * load-balanced RPC may not know it yet. Proof is the finalized nonce past ours while repeated
   * receipt lookups by hash find nothing.
   */
  const nonceProvenTaken = async (transfer: TreasuryTransfer): Promise<boolean> => {
    if ((await ledger.finalizedNonce()) <= transfer.nonce) return false;
    for (let lookup = 0; lookup < nonceConflictProof.receiptLookups; lookup++) {
      if (lookup > 0) await new Promise((r) => setTimeout(r, nonceConflictProof.spacingMs));
      if (await ledger.hasReceipt(transfer.txHash)) return false;
    }
    return true;
  };

  const broadcastTreasuryTransfer = async (transfer: TreasuryTransfer): Promise<void> => {
    try {
      // Re-sending the stored transaction is idempotent: a known or mined one counts as sent.
      await ledger.broadcast(transfer.rawTransaction);
    } catch (err) {
      if (err instanceof ChainError && err.kind === 'insufficient_funds')
        insufficientFunds(transfer.payoutId, err);
      if (err instanceof ChainError && err.kind === 'nonce_conflict' && (await nonceProvenTaken(transfer))) {
        logger.error(
          { payoutId: transfer.payoutId, txHash: transfer.txHash, nonce: transfer.nonce },
          'treasury nonce used by another transaction: this transfer can never be mined',
        );
        throw ApplicationFailure.nonRetryable(err.message, 'ChainRejected');
      }
      throw ApplicationFailure.retryable(err instanceof Error ? err.message : String(err), 'BroadcastFailed');
    }
    logger.info(
      { payoutId: transfer.payoutId, txHash: transfer.txHash, nonce: transfer.nonce },
      'treasury transfer broadcast',
    );
  };

  /**
   * A confirmed transfer counts for this payout only once it is claimed for it: one on-chain transfer
   * settles at most one payout. Claimed by another payout, it is a mismatch for this one.
   */
  const claimedFor = async (
    payoutId: string,
    txHash: string,
    logIndex: number,
  ): Promise<'confirmed' | 'mismatch'> => {
    const holder = await claimTransfer(db, { chainId: ledger.chainId, txHash, logIndex }, payoutId);
    if (holder === payoutId) return 'confirmed';
    metrics.transferClaimConflicts.inc();
    logger.error(
      { event: 'transfer_already_claimed', payoutId, claimedBy: holder, txHash, logIndex },
      'settlement transfer already settled another payout: refused for this one',
    );
    return 'mismatch';
  };

  /** A transfer that is not the payout's (wrong token, recipient or amount): logged, and final. */
  const mismatch = (kind: 'settlement' | 'treasury', txHash: string, reason: string): 'mismatch' => {
    logger.error({ txHash, reason }, `${kind} transfer does not match the payout`);
    return 'mismatch';
  };
  /** Mined but short of its confirmations: Temporal retries the check. */
  const notYetConfirmed = (confirmations: number) =>
    ApplicationFailure.retryable(`transfer has ${confirmations} confirmation(s)`, 'NotYetConfirmed');

  return {
    /**
     * Confirmed, reverted or mismatch; a transfer not yet mined or short of confirmations throws so
     * that Temporal retries it until the workflow's settlement deadline.
     */
    async verifyUsdtTransfer(req: {
      /** The payout the transfer is claimed for once confirmed (absent in attempts scheduled by older runs). */
      payoutId?: string;
      txHash: `0x${string}`;
      to: string;
      amountUnits: string;
      minConfirmations: number;
    }): Promise<'confirmed' | 'reverted' | 'mismatch'> {
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
          return claimedFor(req.payoutId, req.txHash, check.logIndex);
        case 'reverted':
          return 'reverted';
        case 'mismatch':
          return mismatch('settlement', req.txHash, check.reason);
        case 'pending':
          throw notYetConfirmed(check.confirmations);
        case 'not_found':
          throw ApplicationFailure.retryable('transfer not yet known to the node', 'NotYetConfirmed');
      }
    },
    /**
     * Treasury mode: sign once (persisted before broadcast), then (re)broadcast that same transaction.
     * A refusal before signing (no USDT in the treasury, a transfer that would revert) is final and
     * nothing can land. After signing, only the proof that the nonce went to another transaction is
     * final: anything else is retried, since abandoning a signed transaction would leave a nonce gap
     * that stalls every later treasury transfer.
     */
    async sendTreasuryTransfer(req: {
      payoutId: string;
      to: string;
      amountUnits: string;
    }): Promise<{ txHash: `0x${string}` }> {
      const transfer = await getOrCreateTreasuryTransfer(
        db,
        {
          payoutId: req.payoutId,
          toAddress: req.to,
          amountUnits: BigInt(req.amountUnits),
          chainId: ledger.chainId,
          fromAddress: treasuryAddressOf(ledger),
        },
        () => ledger.nextNonce(),
        (nonce) =>
          ledger.signTransfer({ to: req.to as `0x${string}`, amountUnits: BigInt(req.amountUnits), nonce }),
      ).catch((err: unknown) => {
        if (err instanceof ChainError && err.kind === 'insufficient_funds')
          insufficientFunds(req.payoutId, err);
        return fromChainError(err);
      });
      await broadcastTreasuryTransfer(transfer);
      return { txHash: transfer.txHash };
    },
    /**
     * Confirmed, reverted or mismatch for the payout's stored treasury transaction. A transaction the
     * node no longer knows (dropped from the pool, a node restart) is broadcast again; one still
     * waiting throws, so Temporal retries until it lands.
     */
    async confirmTreasuryTransfer(req: {
      payoutId: string;
      to: string;
      amountUnits: string;
      minConfirmations: number;
    }): Promise<'confirmed' | 'reverted' | 'mismatch'> {
      const transfer = await findTreasuryTransfer(db, req.payoutId);
      if (transfer === null) {
        // sendTreasuryTransfer returned its hash, so the row exists: this is a bug, not a state.
        throw ApplicationFailure.nonRetryable(
          `no treasury transfer stored for payout ${req.payoutId}`,
          'ChainRejected',
        );
      }
      const check = await ledger.verifyTransfer({
        txHash: transfer.txHash,
        to: req.to as `0x${string}`,
        amountUnits: BigInt(req.amountUnits),
        minConfirmations: req.minConfirmations,
      });
      switch (check.status) {
        case 'confirmed':
          return claimedFor(req.payoutId, transfer.txHash, check.logIndex);
        case 'reverted':
          return check.status;
        case 'mismatch':
          return mismatch('treasury', transfer.txHash, check.reason);
        case 'pending':
          throw notYetConfirmed(check.confirmations);
        case 'not_found':
          await broadcastTreasuryTransfer(transfer);
          throw ApplicationFailure.retryable('treasury transfer broadcast again', 'NotYetConfirmed');
      }
    },
  };
}

function treasuryAddressOf(ledger: UsdtLedger): string {
  const address = ledger.treasuryAddress();
  if (!address) {
    throw ApplicationFailure.nonRetryable('treasury mode needs TREASURY_PRIVATE_KEY', 'ChainRejected');
  }
  return address;
}

export type ChainActivities = ReturnType<typeof createChainActivities>;
