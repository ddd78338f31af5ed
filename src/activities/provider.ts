import { ApplicationFailure } from '@temporalio/activity';
import { ProviderError, type ChargeCancellation, type PaymentProvider } from '../adapters/provider/types';
import type { ProviderEvent } from '../domain/provider-event';
import type { Logger } from '../observability/logger';

/** A payment as the charge-status endpoint reports it, shaped as the pix.received event it stands for. */
export interface ChargeReconciliation {
  status: 'active' | 'paid' | 'expired' | 'removed';
  expiresAt: string;
  payments: Extract<ProviderEvent, { type: 'pix.received' }>[];
}

/** The provider's settlement as its status endpoint reports it; `unknown` when it does not know it. */
export type SettlementStatus =
  | { status: 'unknown' }
  | {
      status: 'pending' | 'broadcast' | 'completed' | 'failed';
      txHash?: `0x${string}`;
      amountUsdt?: string;
      chainId: number;
      failureReason?: string;
    };

/**
 * The payment provider's calls: create the PIX charge, ask for settlement, read a notification or a
 * charge's status. Each makes one call and says whether its failure is worth retrying.
 */
export function createProviderActivities({
  provider,
  logger,
}: {
  provider: PaymentProvider;
  logger: Logger;
}) {
  /** A provider refusal that retrying cannot fix becomes a non-retryable failure. */
  const fromProviderError = (err: unknown): never => {
    if (err instanceof ProviderError && !err.retryable) {
      throw ApplicationFailure.nonRetryable(err.message, 'ProviderRejected');
    }
    throw err;
  };

  return {
    async createPixCharge(req: {
      payoutId: string;
      amountCentavos: string;
      pixKey: string;
      pixKeyType: string;
      expiresInSeconds: number;
    }): Promise<{ chargeId: string; pixCopyPaste: string; expiresAt: string }> {
      const charge = await provider
        .createCharge({
          externalId: req.payoutId,
          amountCentavos: BigInt(req.amountCentavos),
          payerPixKey: req.pixKey,
          payerPixKeyType: req.pixKeyType,
          expiresInSeconds: req.expiresInSeconds,
        })
        .catch(fromProviderError);
      return { chargeId: charge.chargeId, pixCopyPaste: charge.pixCopyPaste, expiresAt: charge.expiresAt };
    },
    async requestSettlement(req: {
      payoutId: string;
      chargeId: string;
      receiverWallet: string;
      chainId: number;
    }): Promise<{ settlementId: string; status: string; txHash?: `0x${string}` }> {
      const accepted = await provider
        .requestSettlement({
          externalId: req.payoutId,
          chargeId: req.chargeId,
          receiverWallet: req.receiverWallet,
          chainId: req.chainId,
        })
        .catch(fromProviderError);
      return { settlementId: accepted.settlementId, status: 'pending' };
    },
    async fetchSettlementStatus(req: { payoutId: string; settlementId: string }): Promise<SettlementStatus> {
      throw ApplicationFailure.retryable(`not yet built (${req.settlementId})`, 'ProviderUnavailable');
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
     * Removes the charge so it can no longer be paid (the partner cancelled the payout). `already_paid`
     * when a payment reached the provider first. An unknown charge is final: nothing can be removed.
     */
    async cancelPixCharge(req: { payoutId: string; chargeId: string }): Promise<ChargeCancellation> {
      const result = await provider.cancelCharge(req.chargeId).catch(fromProviderError);
      logger.info({ payoutId: req.payoutId, chargeId: req.chargeId, result: result.kind }, 'charge cancel');
      return result;
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
          throw ApplicationFailure.retryable('provider does not know the charge', 'ChargeStatusUnreadable');
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
  };
}

export type ProviderActivities = ReturnType<typeof createProviderActivities>;
