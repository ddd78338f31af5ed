import type { ProviderEvent } from '../../domain/provider-event';

/**
 * The narrow views the service has of its payment provider (docs/provider-api.md, docs/api-pix.md).
 * Everything the workflows and activities know about a provider goes through these interfaces, so a
 * provider is swapped by configuration (PIX_PROVIDER) or for a fake in workflow tests without touching
 * them. Collecting BRL by PIX is every provider's job; settling USDT and quoting are only some
 * providers' (a bank's standard API Pix does neither: the treasury pays and a rate source quotes).
 */
export interface PixCollection {
  /**
   * Idempotent on externalId: a repeat returns the charge created the first time. The charge id is
   * the provider's handle for every later call about the charge.
   */
  createCharge(req: {
    externalId: string;
    amountCentavos: bigint;
    payerPixKey: string;
    payerPixKeyType: string;
    expiresInSeconds: number;
  }): Promise<{ chargeId: string; pixCopyPaste: string; expiresAt: string }>;
  /**
   * The charge as the provider sees it now, with every payment received on it (a static code can be
   * paid more than once). The reconciliation path: it does not depend on any webhook arriving.
   */
  getChargeStatus(chargeId: string): Promise<ChargeStatus>;
  /**
   * The event behind a webhook's token (the provider API's notification token, API Pix's endToEndId),
   * read back from the provider: a webhook body is never believed. Throws
   * ProviderError{ code: 'unknown_notification', retryable: false } when the provider answers 404.
   */
  fetchNotification(token: string): Promise<ProviderEvent>;
  /**
   * Removes an unpaid charge so that it can no longer be paid (BCB's Pix API removes a `cob`).
   * Idempotent: removing a removed charge answers its first removal. A charge paid first is not
   * removed: `already_paid`, and the payment stands. An unknown charge throws `not_found`.
   */
  cancelCharge(chargeId: string): Promise<ChargeCancellation>;
}

/** A provider that also sends the USDT (SETTLEMENT_MODE=provider). */
export interface SettlementProvider {
  /**
   * Idempotent on externalId. Valid only for a charge the provider has seen paid: a charge it does not
   * (yet) see paid throws `charge_not_paid`, which may be a lagging replica rather than a final no.
   * A repeat answers the settlement's current status (and its transaction once one was sent).
   */
  requestSettlement(req: {
    externalId: string;
    chargeId: string;
    receiverWallet: string;
    chainId: number;
  }): Promise<SettlementRequestResult>;
  /**
   * The settlement as the provider sees it now: the way to learn an outcome whose webhook never came.
   * Throws `unknown_settlement` when the provider answers 404 (it may have forgotten it, or not see
   * it yet): not a proof of anything, the caller decides.
   */
  getSettlementStatus(settlementId: string): Promise<SettlementStatus>;
}

/** A provider that quotes the rate. */
export interface QuoteProvider {
  /** Spot rate: BRL per 1 USDT, as a decimal string. */
  getQuote(): Promise<{ rate: string; quotedAt: string }>;
}

/**
 * A collection that can send a received payment back to its payer (API Pix's devolução, the provider
 * API's POST /pix/returns). Our refund id (the refund case's id) names the return: asking again with
 * it is the same return, never a second one, which is what makes a redone activity safe.
 */
export interface PaymentReturns {
  /**
   * Idempotent on refundId: a repeat answers the return asked for the first time (and its status now).
   * Throws `unknown_payment` when the provider has no such received payment.
   */
  requestReturn(req: {
    refundId: string;
    /** The received payment: the provider API's event id, API Pix's endToEndId. */
    eventId: string;
    amountBrl: string;
    reason: string;
  }): Promise<PaymentReturn>;
  /**
   * The return as the provider sees it now. Throws `unknown_return` when it answers 404: not a
   * refusal (it may not see the return yet); the caller keeps the return `returning`.
   */
  getReturn(ref: { refundId: string; eventId: string; returnId: string }): Promise<PaymentReturn>;
}

/**
 * returning: accepted, the money has not reached the payer yet; returned: back in the payer's account
 * (final); refused: final, nothing was sent, with the provider's reason.
 */
export interface PaymentReturn {
  /** The provider's id of the return (API Pix: the devolução's rtrId). */
  returnId: string;
  status: 'returning' | 'returned' | 'refused';
  refusalReason?: string;
}

/** Today's provider API (docs/provider-api.md): collection, returns, settlement and quotes. */
export type PaymentProvider = PixCollection & PaymentReturns & SettlementProvider & QuoteProvider;

export interface ChargeStatus {
  chargeId: string;
  externalId: string;
  /** The charge's amount, as created. */
  amountBrl: string;
  /**
   * active: payable, nothing received; paid: at least one payment received; removed: cancelled by us
   * before any payment (no longer payable); expired: none of these, and past expiry.
   */
  status: 'active' | 'paid' | 'expired' | 'removed';
  expiresAt: string;
  /** Every payment on the charge, oldest first, each under the event id of its pix.received notification. */
  payments: {
    eventId: string;
    amountBrl: string;
    paidAt: string;
    /**
     * The payer is getting this payment back, or got it, by a return the institution reports (API Pix:
     * a devolução in process or done, say by the payer's bank through MED). Such a payment must not
     * settle: its USDT would be paid on BRL that left again.
     */
    returned?: boolean;
    /**
     * Returns done (API Pix: devoluções DEVOLVIDO) add up to the payment's whole amount: the payer has
     * all of it back, so nothing of it is to settle or to refund.
     */
    returnedInFull?: boolean;
  }[];
}

/**
 * pending: accepted, nothing sent yet; broadcast: a transaction was sent (txHash), its outcome is not
 * known yet; completed: mined successfully; failed: final. A failed settlement without txHash never
 * sent anything (a final refusal); with one, its transaction was sent and reverted (verify on chain).
 */
export type SettlementState = 'pending' | 'broadcast' | 'completed' | 'failed';

/** The answer to POST /settlements, first or repeated. */
export interface SettlementRequestResult {
  settlementId: string;
  status: SettlementState;
  /** Once a transaction was sent. */
  txHash?: `0x${string}`;
}

/** GET /settlements/{settlement_id}. */
export interface SettlementStatus {
  settlementId: string;
  externalId: string;
  chargeId: string;
  receiverWallet: string;
  chainId: number;
  status: SettlementState;
  /** Set from `broadcast` on; on `failed` only when a transaction was sent (and reverted). */
  txHash?: `0x${string}`;
  /** The USDT amount the transaction carries: always set on `completed`. */
  amountUsdt?: string;
  /** Only on `failed`. */
  failureReason?: string;
  updatedAt: string;
}

/**
 * Codes a ProviderError carries. Callers branch on `retryable`; the code is for logs, metrics and the
 * cases that need their own handling (`unknown_notification`, `unknown_settlement`, `charge_not_paid`).
 */
export type ProviderErrorCode =
  | 'timeout' // client-side timeout or HTTP 408: retryable
  | 'network_error' // connection refused/reset, DNS: retryable
  | 'rate_limited' // HTTP 429: retryable
  | 'server_error' // HTTP 5xx: retryable
  | 'unauthorized' // HTTP 401/403: our API key is wrong; retrying will not help
  | 'not_found' // HTTP 404 on anything but a notification
  | 'unknown_notification' // HTTP 404 on GET /pix/notification/{token}
  | 'unknown_settlement' // HTTP 404 on GET /settlements/{settlement_id}: not a proof of anything
  | 'charge_not_paid' // HTTP 409 `code: charge_not_paid` on POST /settlements: maybe a lagging replica
  | 'unknown_payment' // HTTP 404 on POST /pix/returns (API Pix: on PUT /pix/{e2eid}/devolucao/{id})
  | 'unknown_return' // HTTP 404 on GET /pix/returns/{return_id}: not a proof of anything
  | 'conflict' // any other HTTP 409: idempotency key reused with other parameters
  | 'bad_request' // any other 4xx: we sent something the provider refuses
  | 'unexpected_status' // 1xx/3xx: we never follow redirects (trust comes from the configured URL)
  | 'invalid_response'; // a 2xx whose body is not what the contract promises: never trusted, never retried

export class ProviderError extends Error {
  override readonly name = 'ProviderError';

  constructor(
    message: string,
    /** One of ProviderErrorCode for errors this client raises; kept `string` so fakes may use their own. */
    readonly code: string,
    readonly retryable: boolean,
    readonly httpStatus?: number,
  ) {
    super(message);
  }
}

/** What removing a charge did: removed now (or before), or nothing because a payment came first. */
export type ChargeCancellation = { kind: 'removed'; removedAt: string } | { kind: 'already_paid' };
