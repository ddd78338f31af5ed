/**
 * Names and message types of the payout workflows, declared once and shared by the api (client),
 * the worker, the workflows and the tests. Nothing here runs I/O, so both sides may import it.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { PayoutRecord } from '../domain/payout';
import type { PixKeyType } from '../domain/pix-key';
import type { ProviderEvent } from '../domain/provider-event';

export const TASK_QUEUE_DEFAULT = 'payouts';

export type SettlementMode = 'provider' | 'treasury';

export interface PayoutSettings {
  chargeExpirySeconds: number;
  settlementTimeoutSeconds: number;
  settlementMode: SettlementMode;
  settlementConfirmations: number;
  chainId: number;
}

export interface PayoutWorkflowInput {
  payoutId: string;
  partnerId: string;
  amountCentavos: string;
  minAmountUsdtUnits: string;
  pixKey: string;
  pixKeyType: PixKeyType;
  receiverWallet: string;
  createdAt: string;
  /** Fixed at start, so a config change never alters a payout already under way. */
  settings: PayoutSettings;
}

/** The current payout; answers GET /v1/payouts/{id}. */
export const getPayoutQuery = defineQuery<PayoutRecord>('getPayout');

/**
 * Resolves once the PIX charge exists (or the payout failed before it could), so POST can answer
 * with pix_copy_paste. Sent together with the start (update-with-start).
 */
export const awaitChargeUpdate = defineUpdate<PayoutRecord>('awaitCharge');

/** A provider event, fetched back from the provider by the provider-event workflow. */
export const providerEventSignal = defineSignal<[ProviderEvent]>('providerEvent');

export function payoutWorkflowId(payoutId: string): string {
  return `payout-${payoutId}`;
}

/**
 * With an Idempotency-Key the workflow id comes from partner + key, so two racing requests that
 * both get past the database claim still meet the same workflow. The key is hashed by the caller:
 * it is opaque client data and ids are visible to operators.
 */
export function idempotentPayoutWorkflowId(partnerId: string, keyHash: string): string {
  return `payout-${partnerId}-idem-${keyHash.slice(0, 32)}`;
}

/**
 * One provider-event workflow per delivered token, so a repeat cannot start a second one. Built from
 * a hash of the token (hex SHA-256, computed by the api): the token is the key to the provider's
 * event, and workflow ids are shown to every operator of the Temporal namespace.
 */
export function providerEventWorkflowId(provider: string, tokenHash: string): string {
  return `provider-event-${provider}-${tokenHash}`;
}
