/**
 * The payout workflow's contract, shared by its clients (the api, tests) and the workflow: input and
 * result, the messages it handles, its workflow ids. Nothing here runs I/O, so both sides import it.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { PayoutRecord } from '../domain/payout';
import type { PixKeyType } from '../domain/pix-key';
import type { ProviderEvent } from '../domain/provider-event';
import type { PayoutHandOver } from './payout/handed-over';

export type SettlementMode = 'provider' | 'treasury';

export interface PayoutSettings {
  chargeExpirySeconds: number;
  /** Past this the settlement is overdue: an alert, never a verdict (the payout keeps waiting for proof). */
  settlementTimeoutSeconds: number;
  settlementMode: SettlementMode;
  settlementConfirmations: number;
  chainId: number;
}

/** The workflow's argument. Its result is the payout as it ended (a PayoutRecord, COMPLETED or FAILED). */
export interface PayoutWorkflowInput {
  payoutId: string;
  partnerId: string;
  amountCentavos: string;
  minAmountUsdtUnits: string;
  pixKey: string;
  pixKeyType: PixKeyType;
  receiverWallet: string;
  createdAt: string;
  /**
   * The most USDT the payment can buy: its amount at the quote's spot rate plus the configured
   * tolerance. A settlement above it is alerted (the provider may be converting money that is in a
   * refund case). Absent for payouts created before it existed.
   */
  maxExpectedUsdtUnits?: string;
  /** Fixed at start, so a config change never alters a payout already under way. */
  settings: PayoutSettings;
  /**
   * The PIX charge, when the api created it before starting the workflow (docs/decisions.md D81):
   * the provider's answer to the same idempotent request the workflow would make. Absent, the
   * workflow creates the charge itself in its first task (API Pix, a provider slow or refusing for
   * the api, payouts started before D81). A worker that predates the field ignores it and asks the
   * provider again, which answers the same charge.
   */
  charge?: PixCharge;
  /**
   * Set by a run that waited long and continued as new (src/workflows/hand-over.ts): this run goes
   * on settling from what the earlier one knew.
   */
  handOver?: PayoutHandOver;
}

/** A PIX charge as the provider created it; `expiresAt` is the provider's clock. */
export interface PixCharge {
  chargeId: string;
  pixCopyPaste: string;
  expiresAt: string;
}

/**
 * The payout as its workflow opens it, before any task has run: what the workflow saves first, and
 * what POST answers when the api created the charge (D81). One definition for both, so the 201 and
 * the workflow's state agree field for field.
 */
export function openingRecord(input: PayoutWorkflowInput): PayoutRecord {
  return {
    id: input.payoutId,
    partnerId: input.partnerId,
    status: 'PENDING',
    amountCentavos: input.amountCentavos,
    minAmountUsdtUnits: input.minAmountUsdtUnits,
    settledAmountUsdtUnits: '0',
    pixKey: input.pixKey,
    pixKeyType: input.pixKeyType,
    receiverWallet: input.receiverWallet,
    pixCopyPaste: input.charge?.pixCopyPaste ?? '',
    ...(input.charge && { providerChargeId: input.charge.chargeId }),
    blockchainTxId: '',
    createdAt: input.createdAt,
    updatedAt: input.createdAt,
    version: 1,
  };
}

/** The current payout; answers GET /v1/payouts/{id}. */
export const getPayoutQuery = defineQuery<PayoutRecord>('getPayout');

/**
 * Resolves once the PIX charge exists (or the payout failed before it could), so POST can answer
 * with pix_copy_paste. Sent together with the start (update-with-start).
 */
export const awaitChargeUpdate = defineUpdate<PayoutRecord>('awaitCharge');

/**
 * The partner's cancel (POST /v1/payouts/{id}/cancel). The workflow decides once between it and the
 * payment: accepted only while PENDING with no payment applied, it removes the charge at the provider
 * and answers the payout FAILED (`cancelled`). Otherwise it fails with an ApplicationFailure of type
 * `PayoutNotCancellable` whose message is the partner's answer (409).
 */
export const cancelPayoutUpdate = defineUpdate<PayoutRecord>('cancelPayout');

/** The failure type of a refused cancel; its message is meant for the partner. */
export const PAYOUT_NOT_CANCELLABLE = 'PayoutNotCancellable';

/**
 * An operator's decision on a payout that waits for one (an open attention item). On an unknown:
 * `fail` ends it FAILED (`operator_decision`, its payment goes to a refund case); `complete` names the
 * on-chain transfer that paid it, which is verified and claimed like any other before the payout
 * completes. On a receiver flagged by screening before the USDT was sent: `refund` ends it FAILED
 * (`receiver_flagged`, its payment goes to a refund case); `release` sends the USDT after all.
 * Refused (ApplicationFailure of type `PayoutNotResolvable`, message for the operator) unless the
 * payout waits on what the decision decides. Answers the payout as it then stands: ended, or
 * PROCESSING once released.
 */
export interface OperatorDecisionInput {
  decision: 'fail' | 'complete' | 'refund' | 'release';
  decidedBy: string;
  reason: string;
  txHash?: `0x${string}`;
  amountUsdtUnits?: string;
}
export const resolvePayoutUpdate = defineUpdate<PayoutRecord, [OperatorDecisionInput]>('resolvePayout');
export const PAYOUT_NOT_RESOLVABLE = 'PayoutNotResolvable';

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
