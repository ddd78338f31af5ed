import { ApplicationFailure } from '@temporalio/activity';
import { ChainError, type UsdtLedger } from '../adapters/chain/usdt-ledger';
import { findPayoutLocation, upsertPayout, type PayoutLocation } from '../adapters/db/payouts-repo';
import type { Db } from '../adapters/db/pool';
import { openRefundCase, type OpenRefundCaseResult } from '../adapters/db/refund-cases-repo';
import { claimTransfer } from '../adapters/db/transfer-claims-repo';
import {
  findTreasuryTransfer,
  getOrCreateTreasuryTransfer,
  type TreasuryTransfer,
} from '../adapters/db/treasury-transfers-repo';
import { ProviderError, type PaymentProvider } from '../adapters/provider/types';
import type { PayoutRecord } from '../domain/payout';
import type { ProviderEvent } from '../domain/provider-event';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';

export interface ActivityDeps {
  db: Db;
  provider: PaymentProvider;
  ledger: UsdtLedger;
  logger: Logger;
  metrics: Metrics;
  /**
   * How a treasury nonce conflict is proven: this many receipt lookups by hash, this far apart, must
   * all find nothing (a load-balanced RPC may answer from a node that lags). Default 3, 2 s apart.
   */
  nonceConflictProof?: { receiptLookups: number; spacingMs: number };
}

/** Why a received payment is refunded rather than settled (the refund metric's `kind` label). */
export type RefundKind =
  'late_payment' | 'wrong_amount' | 'wrong_charge' | 'second_payment' | 'payout_failed';

/** A payment as the charge-status endpoint reports it, shaped as the pix.received event it stands for. */
export type ChargeReconciliation =
  | { status: 'unknown_charge' }
  | {
      status: 'active' | 'paid' | 'expired';
      expiresAt: string;
      payments: Extract<ProviderEvent, { type: 'pix.received' }>[];
    };

/**
 * Thin adapters between the workflows and the outside world: each activity makes one call and
 * turns its errors into retryable or not. Business decisions stay in the workflows and the domain.
 */
export function createActivities({
  db,
  provider,
  ledger,
  logger,
  metrics,
  nonceConflictProof = { receiptLookups: 3, spacingMs: 2_000 },
}: ActivityDeps) {
  /** A provider refusal that retrying cannot fix becomes a non-retryable failure. */
  const fromProviderError = (err: unknown): never => {
    if (err instanceof ProviderError && !err.retryable) {
      throw ApplicationFailure.nonRetryable(err.message, 'ProviderRejected');
    }
    throw err;
  };
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

  return {
    async recordPayout(payout: PayoutRecord, workflowId: string, runId: string): Promise<void> {
      await upsertPayout(db, payout, workflowId, runId);
      metrics.payoutTransitions.inc({ status: payout.status });
      logger.info({ payoutId: payout.id, status: payout.status, version: payout.version }, 'payout recorded');
    },

    async findPayoutWorkflow(payoutId: string): Promise<PayoutLocation | null> {
      // The id column is a uuid: anything else is not ours, and would make the query itself fail.
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(payoutId)) return null;
      return findPayoutLocation(db, payoutId);
    },

    /**
     * Reconciliation: the charge's status and every payment on it, from the provider's charge-status
     * endpoint rather than from webhooks (which can be lost). Provider outages are retried.
     */
    async fetchChargeStatus(req: { payoutId: string; chargeId: string }): Promise<ChargeReconciliation> {
      let status;
      try {
        status = await provider.getChargeStatus(req.chargeId);
      } catch (err) {
        if (err instanceof ProviderError && err.code === 'not_found') {
          logger.warn(
            { payoutId: req.payoutId, chargeId: req.chargeId },
            'provider does not know the charge',
          );
          return { status: 'unknown_charge' };
        }
        return fromProviderError(err);
      }
      if (status.externalId !== req.payoutId) {
        throw ApplicationFailure.nonRetryable('charge status names another payout', 'ProviderRejected');
      }
      return {
        status: status.status,
        expiresAt: status.expiresAt,
        payments: status.payments.map((p) => ({
          type: 'pix.received' as const,
          eventId: p.eventId,
          chargeId: status.chargeId,
          externalId: status.externalId,
          occurredAt: p.paidAt,
          paidAt: p.paidAt,
          amountBrl: p.amountBrl,
        })),
      };
    },

    async createPixCharge(req: {
      payoutId: string;
      amountCentavos: string;
      pixKey: string;
      pixKeyType: string;
      expiresInSeconds: number;
    }): Promise<{ chargeId: string; pixCopyPaste: string }> {
      const charge = await provider
        .createCharge({
          externalId: req.payoutId,
          amountCentavos: BigInt(req.amountCentavos),
          payerPixKey: req.pixKey,
          payerPixKeyType: req.pixKeyType,
          expiresInSeconds: req.expiresInSeconds,
        })
        .catch(fromProviderError);
      return { chargeId: charge.chargeId, pixCopyPaste: charge.pixCopyPaste };
    },

    async requestSettlement(req: {
      payoutId: string;
      chargeId: string;
      receiverWallet: string;
      chainId: number;
    }): Promise<void> {
      await provider
        .requestSettlement({
          externalId: req.payoutId,
          chargeId: req.chargeId,
          receiverWallet: req.receiverWallet,
          chainId: req.chainId,
        })
        .catch(fromProviderError);
    },

    /**
     * The event behind a webhook token; null when the provider does not know the token. Every other
     * failure is retried, even those the client calls final (401, 4xx): the token is already recorded
     * as received, so giving up would lose the event, while a stuck retry is visible and heals once
     * the provider or our configuration is fixed. Only a body that breaks the contract is final.
     */
    async fetchProviderEvent(token: string): Promise<ProviderEvent | null> {
      try {
        return await provider.fetchNotification(token);
      } catch (err) {
        if (!(err instanceof ProviderError)) throw err;
        if (err.code === 'unknown_notification') {
          logger.warn({ tokenPrefix: token.slice(0, 6) }, 'provider does not know this webhook token');
          return null;
        }
        if (err.code === 'invalid_response') {
          throw ApplicationFailure.nonRetryable(err.message, 'ProviderRejected');
        }
        throw ApplicationFailure.retryable(err.message, 'ProviderUnavailable');
      }
    },

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
          logger.error(
            { txHash: req.txHash, reason: check.reason },
            'settlement transfer does not match the payout',
          );
          return 'mismatch';
        case 'pending':
          throw ApplicationFailure.retryable(
            `transfer has ${check.confirmations} confirmation(s)`,
            'NotYetConfirmed',
          );
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
          logger.error(
            { txHash: transfer.txHash, reason: check.reason },
            'treasury transfer does not match the payout',
          );
          return 'mismatch';
        case 'pending':
          throw ApplicationFailure.retryable(
            `transfer has ${check.confirmations} confirmation(s)`,
            'NotYetConfirmed',
          );
        case 'not_found':
          await broadcastTreasuryTransfer(transfer);
          throw ApplicationFailure.retryable('treasury transfer broadcast again', 'NotYetConfirmed');
      }
    },

    async alertSettlementOverdue(a: {
      payoutId: string;
      partnerId: string;
      mode: string;
      overdueSeconds: number;
    }): Promise<void> {
      logger.error(
        { event: 'settlement_overdue', ...a },
        'settlement not confirmed within the settlement timeout; still waiting, check the transfer',
      );
    },

    /** The provider reports USDT delivered for a payout that already ended: reconcile by hand. */
    async alertLateSettlement(a: { payoutId: string; status: string; event: ProviderEvent }): Promise<void> {
      if (a.event.type !== 'settlement.completed') return;
      logger.error(
        {
          event: 'settlement_after_payout_ended',
          payoutId: a.payoutId,
          status: a.status,
          eventId: a.event.eventId,
          txHash: a.event.txHash,
          amountUsdt: a.event.amountUsdt,
        },
        'provider reports a completed settlement for a payout that has ended',
      );
    },

    async alertSettlementBelowMinimum(a: {
      payoutId: string;
      partnerId: string;
      minAmountUsdtUnits: string;
      settledAmountUsdtUnits: string;
    }): Promise<void> {
      metrics.settlementBelowMinimum.inc();
      logger.error(
        { event: 'settlement_below_minimum', ...a },
        'settled USDT is below the guaranteed minimum',
      );
    },

    /**
     * Opens a refund case for a received PIX payment that will not be settled (the activity keeps its
     * first name, which running workflow histories refer to). Raises PayoutRefundDue through the
     * metric. A redelivered event of the payment a payout settles opens nothing.
     */
    async recordLatePayment(req: {
      payoutId: string;
      event: ProviderEvent;
      reason: string;
      kind?: RefundKind;
    }): Promise<OpenRefundCaseResult | 'not_a_payment'> {
      if (req.event.type !== 'pix.received') return 'not_a_payment';
      const kind = req.kind ?? 'late_payment';
      const result = await openRefundCase(db, {
        eventId: req.event.eventId,
        payoutId: req.payoutId,
        chargeId: req.event.chargeId,
        amountBrl: req.event.amountBrl,
        reason: req.reason,
      });
      if (result === 'opened') {
        metrics.refundCasesOpened.inc({ kind });
        logger.error(
          {
            event: 'refund_case_opened',
            kind,
            payoutId: req.payoutId,
            eventId: req.event.eventId,
            amountBrl: req.event.amountBrl,
            reason: req.reason,
          },
          'PIX payment received that will not be settled: refund case opened',
        );
      } else if (result === 'payment_settles_its_payout') {
        logger.info(
          { payoutId: req.payoutId, eventId: req.event.eventId },
          'redelivered event of the payment this payout settles: nothing to refund',
        );
      }
      return result;
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

export type PayoutActivities = ReturnType<typeof createActivities>;
