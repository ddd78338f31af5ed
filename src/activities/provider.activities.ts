import { ApplicationFailure, Context } from '@temporalio/activity';
import {
  ProviderError,
  type ChargeCancellation,
  type PixCollection,
  type SettlementProvider,
  type SettlementState,
} from '../adapters/provider/types';
import type { Db } from '../adapters/db/pool';
import {
  recordSettlementAccepted,
  recordSettlementRequestSent,
} from '../adapters/db/settlement-requests-repo';
import { sameExternalId } from '../domain/ids';
import type { ProviderEvent } from '../domain/provider-event';
import type { Logger } from '../observability/logger';
import type { ReceiverScreening, ScreeningVerdict } from '../domain/screening';
import { PROVIDER_REJECTED } from './failure-types';
import { screenBeforeMoneyMoves } from './screening.activities';

/**
 * The charge as the provider reports it, each payment shaped as the pix.received event it stands for.
 * There is no "unknown" variant on purpose: a status that cannot be read is never taken for unpaid,
 * the activity fails (retryably, `ChargeStatusUnreadable`) instead.
 */
export interface ChargeReconciliation {
  status: 'active' | 'paid' | 'expired' | 'removed';
  expiresAt: string;
  payments: Extract<ProviderEvent, { type: 'pix.received' }>[];
}

/** What the provider said to a settlement request, first or repeated. */
export interface SettlementRequestOutcome {
  settlementId: string;
  status: SettlementState;
  /** Once a transaction was sent. */
  txHash?: `0x${string}`;
}

/**
 * A settlement as the provider reports it. `unknown`: the provider answered 404 (it forgot the
 * settlement, say after a restart, or does not see it yet): no proof of anything. `failed` without
 * txHash is the provider's proof that nothing was sent; with one, the transaction was sent and
 * reverted, which the caller verifies on chain.
 */
export type SettlementReport =
  | { status: 'unknown' }
  | {
      status: SettlementState;
      txHash?: `0x${string}`;
      amountUsdt?: string;
      chainId: number;
      failureReason?: string;
    };

/**
 * The payment provider's calls: create the PIX charge, ask for settlement, read a notification or a
 * charge's status. Each makes one call and says whether its failure is worth retrying. `provider`
 * collects the BRL (whichever PIX_PROVIDER is); `settlementProvider` is the provider that sends the
 * USDT in provider settlement mode, absent where the provider cannot (API Pix: the treasury pays).
 */
export function createProviderActivities({
  db,
  provider,
  settlementProvider,
  screening,
  logger,
}: {
  /** Where a settlement request sent is recorded, for a run that knows nothing of it (a reset). */
  db: Db;
  provider: PixCollection;
  settlementProvider?: SettlementProvider | undefined;
  /** The receiver is screened before every settlement request attempt. */
  screening: ReceiverScreening;
  logger: Logger;
}) {
  /**
   * Only a payout started in provider settlement mode asks the provider to settle. Should one still
   * run on a worker whose provider cannot (its configuration changed under it), nothing about its
   * USDT is known: the step waits, retried and visible, for a worker that can, never a verdict.
   */
  const settling = (): SettlementProvider => {
    if (settlementProvider !== undefined) return settlementProvider;
    logger.error('a payout asks the provider to settle, but this PIX provider sends no USDT');
    throw ApplicationFailure.retryable(
      'this worker has no settlement provider (PIX_PROVIDER sends no USDT)',
      'SettlementProviderNotConfigured',
    );
  };
  /** A provider refusal that retrying cannot fix becomes a non-retryable failure. */
  const fromProviderError = (err: unknown): never => {
    if (err instanceof ProviderError && !err.retryable) {
      throw ApplicationFailure.nonRetryable(err.message, PROVIDER_REJECTED);
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
      // expiresAt is the provider's clock: the payout's expiry follows it rather than ours.
      return { chargeId: charge.chargeId, pixCopyPaste: charge.pixCopyPaste, expiresAt: charge.expiresAt };
    },
    /**
     * Asks the provider to settle (idempotent on the payout id) and returns what it says the
     * settlement is now. Only a 400 is a refusal (`ProviderRejected`, final): the provider looked at
     * the request and will never act on it. A 409 conflict is not: our request is the same on every
     * attempt, so the provider holding another settlement for this payout or this charge means one
     * exists that may move USDT (`SettlementConflict`, retried and alerted until an operator decides).
     * Anything else proves nothing about whether USDT moved or will: `ChargeNotPaidYet` (the
     * provider does not see the payment yet, perhaps a lagging replica; the caller bounds it) or
     * `ProviderUnavailable` (401/403 after a key rotation, 404, 5xx, timeout, an unreadable answer).
     */
    async requestSettlement(req: {
      payoutId: string;
      chargeId: string;
      receiverWallet: string;
      chainId: number;
      /** An operator released the payout after screening flagged its receiver: sent unscreened. */
      released?: boolean;
    }): Promise<SettlementRequestOutcome | { flagged: Extract<ScreeningVerdict, { kind: 'flagged' }> }> {
      // Before every attempt, however long the provider has been down: a receiver listed during an
      // outage is not paid by a retry (nothing is sent; the payout waits for an operator).
      if (!req.released) {
        const verdict = await screenBeforeMoneyMoves(
          { screening, logger },
          req.payoutId,
          req.receiverWallet,
          'right before the settlement request (nothing requested)',
        );
        if (verdict.kind === 'flagged') return { flagged: verdict };
      }
      const settler = settling();
      // On record before it leaves: a database that cannot write it sends nothing (retried).
      await recordSettlementRequestSent(db, req.payoutId);
      try {
        const result = await settler.requestSettlement({
          externalId: req.payoutId,
          chargeId: req.chargeId,
          receiverWallet: req.receiverWallet,
          chainId: req.chainId,
        });
        await recordSettlementAccepted(db, req.payoutId, result.settlementId);
        return {
          settlementId: result.settlementId,
          status: result.status,
          ...(result.txHash !== undefined && { txHash: result.txHash }),
        };
      } catch (err) {
        if (!(err instanceof ProviderError)) throw err;
        const log = {
          payoutId: req.payoutId,
          chargeId: req.chargeId,
          code: err.code,
          status: err.httpStatus,
        };
        if (err.code === 'charge_not_paid') {
          logger.warn(log, 'provider does not see the charge paid yet; settlement request will be retried');
          throw ApplicationFailure.retryable(err.message, 'ChargeNotPaidYet');
        }
        if (err.httpStatus === 400) {
          // The attempt goes with the refusal: after an earlier attempt whose answer was lost, a
          // refusal ("already exists", a gateway's 400) proves nothing about the USDT.
          const attempt = currentAttempt();
          logger.error({ ...log, attempt }, 'provider refused the settlement request');
          throw ApplicationFailure.create({
            message: err.message,
            type: PROVIDER_REJECTED,
            nonRetryable: true,
            details: [{ attempt }],
          });
        }
        if (err.code === 'conflict') {
          logger.error(log, 'provider holds a conflicting settlement for this payout or charge');
          throw ApplicationFailure.retryable(err.message, 'SettlementConflict');
        }
        logger.warn(log, 'settlement request not answered; retrying');
        throw ApplicationFailure.retryable(err.message, 'ProviderUnavailable');
      }
    },
    /**
     * The settlement's status at the provider, the way to learn an outcome whose webhook never came
     * (or a provider that stopped after sending). A 404 is `unknown`; every provider failure is
     * retried (`ProviderUnavailable`), since none of them says anything about the USDT. Only an
     * answer about another payout is final (`ProviderRejected`): the provider is confused, and
     * retrying will not make its answer ours.
     */
    async fetchSettlementStatus(req: { payoutId: string; settlementId: string }): Promise<SettlementReport> {
      let status;
      try {
        status = await settling().getSettlementStatus(req.settlementId);
      } catch (err) {
        if (!(err instanceof ProviderError)) throw err;
        const log = { payoutId: req.payoutId, settlementId: req.settlementId };
        if (err.code === 'unknown_settlement') {
          logger.warn(log, 'provider does not know the settlement');
          return { status: 'unknown' };
        }
        logger.warn({ ...log, code: err.code, status: err.httpStatus }, 'settlement status unreadable');
        throw ApplicationFailure.retryable(err.message, 'ProviderUnavailable');
      }
      if (!sameExternalId(status.externalId, req.payoutId)) {
        logger.error(
          { payoutId: req.payoutId, settlementId: req.settlementId, externalId: status.externalId },
          'settlement status names another payout',
        );
        throw ApplicationFailure.nonRetryable('settlement status names another payout', PROVIDER_REJECTED);
      }
      return {
        status: status.status,
        ...(status.txHash !== undefined && { txHash: status.txHash }),
        ...(status.amountUsdt !== undefined && { amountUsdt: status.amountUsdt }),
        chainId: status.chainId,
        ...(status.failureReason !== undefined && { failureReason: status.failureReason }),
      };
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
          throw ApplicationFailure.nonRetryable(err.message, PROVIDER_REJECTED);
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
     * endpoint rather than from webhooks (which can be lost). A status that cannot be read is never
     * "unpaid": 401/403, 404 (for a charge we created), 5xx, a timeout, a body that breaks the
     * contract or names another payout all fail retryably as `ChargeStatusUnreadable`, so a payment
     * known only to the provider is not lost to an outage, a key rotation or a provider restart.
     */
    async fetchChargeStatus(req: { payoutId: string; chargeId: string }): Promise<ChargeReconciliation> {
      const unreadable = (message: string, detail: Record<string, unknown>): never => {
        logger.error(
          { payoutId: req.payoutId, chargeId: req.chargeId, ...detail },
          'charge status unreadable',
        );
        throw ApplicationFailure.retryable(message, 'ChargeStatusUnreadable');
      };
      let status;
      try {
        status = await provider.getChargeStatus(req.chargeId);
      } catch (err) {
        if (!(err instanceof ProviderError)) throw err;
        return unreadable(err.message, { code: err.code, status: err.httpStatus });
      }
      if (!sameExternalId(status.externalId, req.payoutId)) {
        return unreadable('charge status names another payout', { externalId: status.externalId });
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

/** This activity attempt's number (1 for the first); undefined when called outside an activity (tests). */
function currentAttempt(): number | undefined {
  try {
    return Context.current().info.attempt;
  } catch {
    return undefined;
  }
}
