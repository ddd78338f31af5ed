import { randomBytes } from 'node:crypto';

import type { Address, Hex } from 'viem';

/**
 * The sandbox's memory. It is deliberately not persistent: a sandbox restart forgets every charge,
 * settlement and notification, which is fine for tests and demos (a payout whose charge was forgotten
 * simply expires) and keeps the program free of storage. Nothing is ever evicted either; a sandbox
 * lives for one test run or demo session.
 */

export type PaymentOutcome = 'settled' | 'settlement_failed';

export interface Charge {
  chargeId: string;
  /** BR Code field 62/05: the charge id without non-alphanumerics, at most 25 characters. */
  txid: string;
  externalId: string;
  amountCentavos: bigint;
  payerPixKey: string;
  payerPixKeyType: string;
  pixCopyPaste: string;
  createdAt: Date;
  expiresAt: Date;
  /**
   * Every payment received, oldest first. A static BR Code can be paid again, and its amount edited
   * by the payer: the provider records what arrived, the service decides what settles.
   */
  payments: Payment[];
  settlementId?: string;
  /** Set once when the receiver removes the unpaid charge; the payer's bank then refuses it. */
  removedAt?: Date;
}

export interface Payment {
  /** The event id of this payment's pix.received notification (delivered or not). */
  eventId: string;
  paidAt: Date;
  amountCentavos: bigint;
  outcome: PaymentOutcome;
}

export interface Settlement {
  settlementId: string;
  externalId: string;
  chargeId: string;
  receiverWallet: Address;
  chainId: number;
  status: 'pending' | 'completed' | 'failed';
  txHash?: Hex;
}

/** The wire body of GET /pix/notification/{token}, stored as it will be served. */
export type NotificationBody = {
  token: string;
  event_id: string;
  charge_id: string;
  external_id: string;
  occurred_at: string;
} & (
  | { type: 'pix.received'; paid_at: string; amount_brl: string }
  | {
      type: 'settlement.completed';
      tx_hash: Hex;
      amount_usdt: string;
      chain_id: number;
      confirmed_at: string;
    }
  | { type: 'settlement.failed'; failure_reason: string }
);

/** Distributes NotificationBody over its union so each variant keeps its own fields. */
type WithoutGenerated<T> = T extends unknown ? Omit<T, 'token' | 'event_id'> : never;
export type NotificationInput = WithoutGenerated<NotificationBody>;

export class SandboxState {
  private readonly charges = new Map<string, Charge>();
  private readonly chargeIdByExternalId = new Map<string, string>();
  private readonly chargeIdByTxid = new Map<string, string>();
  private readonly settlements = new Map<string, Settlement>();
  private readonly settlementIdByExternalId = new Map<string, string>();
  private readonly notifications = new Map<string, NotificationBody>();
  private readonly tokenByEventId = new Map<string, string>();

  chargeById(chargeId: string): Charge | undefined {
    return this.charges.get(chargeId);
  }

  chargeByExternalId(externalId: string): Charge | undefined {
    const id = this.chargeIdByExternalId.get(externalId);
    return id === undefined ? undefined : this.charges.get(id);
  }

  chargeByTxid(txid: string): Charge | undefined {
    const id = this.chargeIdByTxid.get(txid);
    return id === undefined ? undefined : this.charges.get(id);
  }

  addCharge(charge: Charge): void {
    this.charges.set(charge.chargeId, charge);
    this.chargeIdByExternalId.set(charge.externalId, charge.chargeId);
    this.chargeIdByTxid.set(charge.txid, charge.chargeId);
  }

  settlementByExternalId(externalId: string): Settlement | undefined {
    const id = this.settlementIdByExternalId.get(externalId);
    return id === undefined ? undefined : this.settlements.get(id);
  }

  addSettlement(settlement: Settlement): void {
    this.settlements.set(settlement.settlementId, settlement);
    this.settlementIdByExternalId.set(settlement.externalId, settlement.settlementId);
  }

  /** Stores a new event under a fresh token and returns what will be served for it. */
  addNotification(input: NotificationInput, eventId = newId('evt')): NotificationBody {
    const body = { ...input, token: newToken(), event_id: eventId } as NotificationBody;
    this.notifications.set(body.token, body);
    this.tokenByEventId.set(eventId, body.token);
    return body;
  }

  /** The same event under a new token, as a provider redelivering it would serve it. */
  reissueNotification(eventId: string): NotificationBody | undefined {
    const token = this.tokenByEventId.get(eventId);
    const original = token === undefined ? undefined : this.notifications.get(token);
    if (!original) return undefined;
    const body = { ...original, token: newToken() };
    this.notifications.set(body.token, body);
    return body;
  }

  notification(token: string): NotificationBody | undefined {
    return this.notifications.get(token);
  }
}

/** `chg_3f9a...`: 22 hex digits (88 random bits), so the charge's txid is exactly 25 characters. */
export function newId(prefix: 'chg' | 'stl' | 'evt'): string {
  return `${prefix}_${randomBytes(11).toString('hex')}`;
}

/** 256 random bits, base64url: opaque and safe in a URL path without escaping. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

export function txidOf(chargeId: string): string {
  return chargeId.replace(/[^A-Za-z0-9]/g, '').slice(0, 25);
}
