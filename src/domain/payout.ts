import { centavosToNumber, usdtUnitsToNumber } from './money';
import type { PixKeyType } from './pix-key';

export const PAYOUT_STATUSES = ['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED'] as const;
export type PayoutStatus = (typeof PAYOUT_STATUSES)[number];

/**
 * The chain payouts settle on, as a COMPLETED payout shows it: the settings EVM_CHAIN_ID,
 * SETTLEMENT_NETWORK_NAME and BLOCK_EXPLORER_URL of the process that answers.
 */
export interface SettlementNetwork {
  name: string;
  chainId: number;
  /** The block explorer; a transfer is at `<explorerUrl>/tx/<hash>`. */
  explorerUrl: string;
}

export type FailureReason =
  | 'charge_creation_failed'
  | 'charge_expired'
  /** The partner cancelled the payout while it was PENDING; its charge was removed at the provider. */
  | 'cancelled'
  /** The provider refused the settlement request, or the treasury transfer was refused before signing. */
  | 'settlement_request_failed'
  /** The provider reported the settlement failed and its status shows nothing was ever broadcast. */
  | 'provider_reported_failure'
  | 'transfer_reverted'
  /** The treasury transfer's nonce was proven consumed by another transaction: it can never land. */
  | 'transfer_nonce_taken'
  /** An operator decided, with a recorded reason, that the payout fails (`admin payouts resolve`). */
  | 'operator_decision'
  /** The receiver was flagged by screening before the USDT was sent; an operator decided to refund the payer. */
  | 'receiver_flagged'
  /** Treasury mode: before anything was signed, the payment was found returned to the payer in full (nothing to refund). */
  | 'payment_returned'
  /** Reasons of earlier code, kept so stored rows still parse: no longer decided by a timeout or a mismatch. */
  | 'transfer_mismatch'
  | 'settlement_timeout';

/**
 * The payout as the service holds it: in the workflow's state, in the read model and in Temporal
 * payloads. Money is integer units carried as decimal strings (JSON has no bigint). This type has
 * internal fields; partners only ever see `toPayoutResponse` of it.
 */
export interface PayoutRecord {
  id: string;
  partnerId: string;
  status: PayoutStatus;
  amountCentavos: string;
  minAmountUsdtUnits: string;
  settledAmountUsdtUnits: string;
  pixKey: string;
  pixKeyType: PixKeyType;
  receiverWallet: string;
  pixCopyPaste: string;
  providerChargeId?: string;
  blockchainTxId: string;
  paidAt?: string;
  /** The provider event id of the PIX payment this payout settles (internal: never shown). */
  paymentEventId?: string;
  confirmedAt?: string;
  failureReason?: FailureReason;
  createdAt: string;
  updatedAt: string;
  /** Bumped on every change, so an older read-model write never overwrites a newer one. */
  version: number;
}

/** The partner-facing Payout of docs/api.md, field for field; the only shape any response carries. */
export interface PayoutResponse {
  id: string;
  partner_id: string;
  status: PayoutStatus;
  amount_brl: number;
  min_amount_usdt: number;
  settled_amount_usdt: number;
  pix_key: string;
  pix_key_type: PixKeyType;
  receiver_wallet: string;
  pix_copy_paste: string;
  blockchain_network: string;
  blockchain_chain_id: number;
  blockchain_tx_id: string;
  block_explorer_url: string;
  paid_at?: string;
  confirmed_at?: string;
  created_at: string;
  updated_at: string;
}

/**
 * One serializer for POST, GET and callbacks. It whitelists fields, and settlement fields show only
 * on COMPLETED payouts (docs/decisions.md D17): a FAILED payout keeps the initial
 * empty values even when it had been paid.
 */
export function toPayoutResponse(p: PayoutRecord, network: SettlementNetwork): PayoutResponse {
  const settled = p.status === 'COMPLETED';
  const response: PayoutResponse = {
    id: p.id,
    partner_id: p.partnerId,
    status: p.status,
    amount_brl: centavosToNumber(BigInt(p.amountCentavos)),
    min_amount_usdt: usdtUnitsToNumber(BigInt(p.minAmountUsdtUnits)),
    settled_amount_usdt: settled ? usdtUnitsToNumber(BigInt(p.settledAmountUsdtUnits)) : 0,
    pix_key: p.pixKey,
    pix_key_type: p.pixKeyType,
    receiver_wallet: p.receiverWallet,
    pix_copy_paste: p.pixCopyPaste,
    blockchain_network: settled ? network.name : '',
    blockchain_chain_id: settled ? network.chainId : 0,
    blockchain_tx_id: settled ? p.blockchainTxId : '',
    block_explorer_url: settled ? `${network.explorerUrl.replace(/\/+$/, '')}/tx/${p.blockchainTxId}` : '',
    created_at: p.createdAt,
    updated_at: p.updatedAt,
  };
  if (settled && p.paidAt) response.paid_at = p.paidAt;
  if (settled && p.confirmedAt) response.confirmed_at = p.confirmedAt;
  return response;
}

const ALLOWED_TRANSITIONS: Record<PayoutStatus, readonly PayoutStatus[]> = {
  PENDING: ['PROCESSING', 'FAILED'],
  PROCESSING: ['COMPLETED', 'FAILED'],
  COMPLETED: [],
  FAILED: [],
};

export function isTerminal(status: PayoutStatus): boolean {
  return ALLOWED_TRANSITIONS[status].length === 0;
}

export class IllegalTransitionError extends Error {
  constructor(from: PayoutStatus, to: PayoutStatus) {
    super(`payout cannot move from ${from} to ${to}`);
  }
}

/** Applies a state change; transitions are one-way and terminal states never move (docs/decisions.md D17). */
export function transition(
  p: PayoutRecord,
  to: PayoutStatus,
  at: string,
  changes: Partial<Omit<PayoutRecord, 'id' | 'partnerId' | 'status' | 'version' | 'updatedAt'>> = {},
): PayoutRecord {
  if (!ALLOWED_TRANSITIONS[p.status].includes(to)) throw new IllegalTransitionError(p.status, to);
  return { ...p, ...changes, status: to, updatedAt: at, version: p.version + 1 };
}

/** A change that keeps the status (e.g. the PIX charge attached to a PENDING payout). */
export function amend(
  p: PayoutRecord,
  at: string,
  changes: Partial<Omit<PayoutRecord, 'id' | 'partnerId' | 'status' | 'version' | 'updatedAt'>>,
): PayoutRecord {
  return { ...p, ...changes, updatedAt: at, version: p.version + 1 };
}
