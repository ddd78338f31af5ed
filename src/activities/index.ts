import { ApplicationFailure } from '@temporalio/activity';
import { ChainError, type UsdtLedger } from '../adapters/chain/usdt-ledger';
import { findPayoutLocation, upsertPayout, type PayoutLocation } from '../adapters/db/payouts-repo';
import type { Db } from '../adapters/db/pool';
import {
  findTreasuryTransfer,
  getOrCreateTreasuryTransfer,
  recordRefundCase,
  type TreasuryTransfer,
} from '../adapters/db/settlement-repo';
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
}

/**
 * Thin adapters between the workflows and the outside world: each activity makes one call and
 * turns its errors into retryable or not. Business decisions stay in the workflows and the domain.
 */
export function createActivities({ db, provider, ledger, logger, metrics }: ActivityDeps) {
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

  const broadcastTreasuryTransfer = async (transfer: TreasuryTransfer): Promise<void> => {
    try {
      // Re-sending the stored transaction is idempotent: a known or mined one counts as sent.
      await ledger.broadcast(transfer.rawTransaction);
    } catch (err) {
      if (err instanceof ChainError && err.kind === 'nonce_conflict') {
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

  return {
    async recordPayout(payout: PayoutRecord, workflowId: string, runId: string): Promise<void> {
      await upsertPayout(db, payout, workflowId, runId);
      metrics.payoutTransitions.inc({ status: payout.status });
      if (payout.status === 'COMPLETED' && payout.paidAt && payout.confirmedAt) {
        const seconds = (Date.parse(payout.confirmedAt) - Date.parse(payout.paidAt)) / 1000;
        if (Number.isFinite(seconds) && seconds >= 0) metrics.paidToCompleted.observe(seconds);
      }
      logger.info({ payoutId: payout.id, status: payout.status, version: payout.version }, 'payout recorded');
    },

    async findPayoutWorkflow(payoutId: string): Promise<PayoutLocation | null> {
      // The id column is a uuid: anything else is not ours, and would make the query itself fail.
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(payoutId)) return null;
      return findPayoutLocation(db, payoutId);
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
          return 'confirmed';
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
      ).catch(fromChainError);
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

    async recordLatePayment(req: { payoutId: string; event: ProviderEvent; reason: string }): Promise<void> {
      if (req.event.type !== 'pix.received') return;
      const created = await recordRefundCase(db, {
        eventId: req.event.eventId,
        payoutId: req.payoutId,
        chargeId: req.event.chargeId,
        amountBrl: req.event.amountBrl,
        reason: req.reason,
      });
      if (created) {
        metrics.latePayments.inc();
        logger.error(
          { event: 'late_payment_refund_required', payoutId: req.payoutId, eventId: req.event.eventId },
          'PIX payment arrived for a payout that has ended: recorded for refund',
        );
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

export type PayoutActivities = ReturnType<typeof createActivities>;
