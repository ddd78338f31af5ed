import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

import type { Address, Hex } from 'viem';

/**
 * The sandbox's memory. By default it is in memory only: a restart forgets every charge, settlement
 * and notification, and the sandbox then answers 404 for them (it says it does not know rather than
 * guessing). With SANDBOX_STATE_FILE it is written to that JSON file after every change and read back
 * at start, so a restarted sandbox still knows what it broadcast (a settlement is saved as `broadcast`,
 * with its signed transaction, before the transaction is sent). Nothing is ever evicted; a sandbox
 * lives for one test run or demo session, so rewriting the whole file each time is cheap enough.
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
  /**
   * pending: accepted, nothing sent; broadcast: a transaction was signed, saved and sent (txHash),
   * no receipt yet; completed: mined successfully; failed: final (txHash only if it was sent and
   * reverted).
   */
  status: 'pending' | 'broadcast' | 'completed' | 'failed';
  txHash?: Hex;
  /** The signed transaction, kept so a restarted sandbox can send it again (same hash, same nonce). */
  rawTx?: Hex;
  /** The USDT amount of the transaction, from broadcast on. */
  amountUsdt?: string;
  failureReason?: string;
  updatedAt: Date;
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

/** API Pix (BCB) records: the face of dev/sandbox/api-pix. Amounts are centavos. */
export type CobStatus = 'ATIVA' | 'CONCLUIDA' | 'REMOVIDA_PELO_USUARIO_RECEBEDOR' | 'REMOVIDA_PELO_PSP';

export interface Cob {
  txid: string;
  /** 0 at creation, one more at each change (its removal). */
  revisao: number;
  createdAt: Date;
  /** Seconds from createdAt (calendario.expiracao). */
  expiracao: number;
  amountCentavos: bigint;
  modalidadeAlteracao: 0 | 1;
  chave: string;
  solicitacaoPagador?: string;
  devedor?: Record<string, string>;
  locId: number;
  /** Without scheme, as in field 26-25 of its BR Code. */
  location: string;
  pixCopiaECola: string;
  status: CobStatus;
  /** The Pix received for it, by endToEndId, oldest first. */
  endToEndIds: string[];
}

export interface ReceivedPix {
  endToEndId: string;
  txid: string;
  amountCentavos: bigint;
  chave: string;
  horario: Date;
  infoPagador?: string;
  devolucoes: Devolucao[];
}

export interface Devolucao {
  id: string;
  rtrId: string;
  amountCentavos: bigint;
  natureza: 'ORIGINAL' | 'RETIRADA';
  descricao?: string;
  requestedAt: Date;
  status: 'EM_PROCESSAMENTO' | 'DEVOLVIDO' | 'NAO_REALIZADO';
  settledAt?: Date;
  motivo?: string;
  /** Set by the sandbox control at request time: this one will end NAO_REALIZADO. */
  refuse?: boolean;
}

/** Money back in the payer's account: one per DEVOLVIDO devolução, so a test can count them. */
export interface PayerReturn {
  rtrId: string;
  endToEndId: string;
  devolucaoId: string;
  amountCentavos: bigint;
  returnedAt: Date;
}

/** A return of the provider API (POST /pix/returns), by our refund id. */
export interface ProviderReturn {
  returnId: string;
  refundId: string;
  /** The returned payment's event id. */
  eventId: string;
  amountCentavos: bigint;
  reason: string;
  status: 'returning' | 'returned' | 'refused';
  refusalReason?: string;
  requestedAt: Date;
  updatedAt: Date;
}

export interface PixWebhook {
  chave: string;
  webhookUrl: string;
  createdAt: Date;
}

/** Distributes NotificationBody over its union so each variant keeps its own fields. */
type WithoutGenerated<T> = T extends unknown ? Omit<T, 'token' | 'event_id'> : never;
export type NotificationInput = WithoutGenerated<NotificationBody>;

/** The file format of SANDBOX_STATE_FILE. */
interface Snapshot {
  version: 1;
  charges: Charge[];
  settlements: Settlement[];
  notifications: NotificationBody[];
  tokenByEventId: [string, string][];
  // API Pix records; absent in files written before that face existed.
  cobs?: Cob[];
  pix?: ReceivedPix[];
  returns?: PayerReturn[];
  pixWebhooks?: PixWebhook[];
  providerReturns?: ProviderReturn[];
}

export class SandboxStateFileError extends Error {
  override readonly name = 'SandboxStateFileError';
}

export class SandboxState {
  /** `file`: where every change is saved (SANDBOX_STATE_FILE); none keeps the state in memory only. */
  constructor(private readonly file?: string) {}

  /** The state saved in `file`, or an empty one saving there when the file does not exist yet. */
  static load(file: string): SandboxState {
    const state = new SandboxState(file);
    if (!existsSync(file)) return state;
    let snapshot: Snapshot;
    try {
      snapshot = JSON.parse(readFileSync(file, 'utf8'), revive) as Snapshot;
    } catch (err) {
      // Starting empty would forget what was broadcast: refuse to start instead.
      throw new SandboxStateFileError(
        `SANDBOX_STATE_FILE ${file} is unreadable: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    if (snapshot.version !== 1) {
      throw new SandboxStateFileError(
        `SANDBOX_STATE_FILE ${file}: unknown version ${String(snapshot.version)}`,
      );
    }
    for (const charge of snapshot.charges) state.indexCharge(charge);
    for (const settlement of snapshot.settlements) state.indexSettlement(settlement);
    for (const body of snapshot.notifications) state.notifications.set(body.token, body);
    for (const [eventId, token] of snapshot.tokenByEventId) state.tokenByEventId.set(eventId, token);
    for (const cob of snapshot.cobs ?? []) state.indexCob(cob);
    for (const pix of snapshot.pix ?? []) state.pix.set(pix.endToEndId, pix);
    state.returns.push(...(snapshot.returns ?? []));
    for (const hook of snapshot.pixWebhooks ?? []) state.pixWebhooks.set(hook.chave, hook);
    for (const r of snapshot.providerReturns ?? []) state.providerReturns.set(r.refundId, r);
    return state;
  }

  /**
   * Writes the whole state to the file, if any: to a temporary file first, then renamed over the old
   * one, so a crash mid-write leaves the previous state rather than half a file. Synchronous on
   * purpose: once it returns, what was saved survives a crash of the process.
   */
  save(): void {
    if (this.file === undefined) return;
    const snapshot: Snapshot = {
      version: 1,
      charges: [...this.charges.values()],
      settlements: [...this.settlements.values()],
      notifications: [...this.notifications.values()],
      tokenByEventId: [...this.tokenByEventId],
      cobs: [...this.cobs.values()],
      pix: [...this.pix.values()],
      returns: this.returns,
      pixWebhooks: [...this.pixWebhooks.values()],
      providerReturns: [...this.providerReturns.values()],
    };
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify(snapshot, tag), { flush: true });
    renameSync(tmp, this.file);
  }

  /** Every settlement, for resuming the unfinished ones after a restart. */
  allSettlements(): Settlement[] {
    return [...this.settlements.values()];
  }

  settlementById(settlementId: string): Settlement | undefined {
    return this.settlements.get(settlementId);
  }

  private readonly charges = new Map<string, Charge>();
  private readonly chargeIdByExternalId = new Map<string, string>();
  private readonly chargeIdByTxid = new Map<string, string>();
  private readonly settlements = new Map<string, Settlement>();
  private readonly settlementIdByExternalId = new Map<string, string>();
  private readonly notifications = new Map<string, NotificationBody>();
  private readonly tokenByEventId = new Map<string, string>();
  private readonly cobs = new Map<string, Cob>();
  private readonly txidByLocation = new Map<string, string>();
  private readonly pix = new Map<string, ReceivedPix>();
  private readonly returns: PayerReturn[] = [];
  private readonly pixWebhooks = new Map<string, PixWebhook>();
  private readonly providerReturns = new Map<string, ProviderReturn>();

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
    this.indexCharge(charge);
    this.save();
  }

  private indexCharge(charge: Charge): void {
    this.charges.set(charge.chargeId, charge);
    this.chargeIdByExternalId.set(charge.externalId, charge.chargeId);
    this.chargeIdByTxid.set(charge.txid, charge.chargeId);
  }

  settlementByExternalId(externalId: string): Settlement | undefined {
    const id = this.settlementIdByExternalId.get(externalId);
    return id === undefined ? undefined : this.settlements.get(id);
  }

  addSettlement(settlement: Settlement): void {
    this.indexSettlement(settlement);
    this.save();
  }

  private indexSettlement(settlement: Settlement): void {
    this.settlements.set(settlement.settlementId, settlement);
    this.settlementIdByExternalId.set(settlement.externalId, settlement.settlementId);
  }

  /** Stores a new event under a fresh token and returns what will be served for it. */
  addNotification(input: NotificationInput, eventId = newId('evt')): NotificationBody {
    const body = { ...input, token: newToken(), event_id: eventId } as NotificationBody;
    this.notifications.set(body.token, body);
    this.tokenByEventId.set(eventId, body.token);
    this.save();
    return body;
  }

  /** The same event under a new token, as a provider redelivering it would serve it. */
  reissueNotification(eventId: string): NotificationBody | undefined {
    const token = this.tokenByEventId.get(eventId);
    const original = token === undefined ? undefined : this.notifications.get(token);
    if (!original) return undefined;
    const body = { ...original, token: newToken() };
    this.notifications.set(body.token, body);
    this.save();
    return body;
  }

  notification(token: string): NotificationBody | undefined {
    return this.notifications.get(token);
  }

  // API Pix. Records are changed in place by their owner (dev/sandbox/api-pix), which calls save().

  cob(txid: string): Cob | undefined {
    return this.cobs.get(txid);
  }

  cobByLocation(location: string): Cob | undefined {
    const txid = this.txidByLocation.get(location);
    return txid === undefined ? undefined : this.cobs.get(txid);
  }

  /** Location ids are never reused: one more than the highest ever given. */
  nextLocId(): number {
    let max = 0;
    for (const cob of this.cobs.values()) max = Math.max(max, cob.locId);
    return max + 1;
  }

  addCob(cob: Cob): void {
    this.indexCob(cob);
    this.save();
  }

  private indexCob(cob: Cob): void {
    this.cobs.set(cob.txid, cob);
    this.txidByLocation.set(cob.location, cob.txid);
  }

  receivedPix(endToEndId: string): ReceivedPix | undefined {
    return this.pix.get(endToEndId);
  }

  allReceivedPix(): ReceivedPix[] {
    return [...this.pix.values()];
  }

  /** The Pix and its cob's new status, saved together. */
  addReceivedPix(pix: ReceivedPix, cob: Cob): void {
    this.pix.set(pix.endToEndId, pix);
    cob.endToEndIds.push(pix.endToEndId);
    cob.status = 'CONCLUIDA';
    this.save();
  }

  addReturn(entry: PayerReturn): void {
    this.returns.push(entry);
    this.save();
  }

  allReturns(): readonly PayerReturn[] {
    return this.returns;
  }

  // The provider API's returns. Changed in place by dev/sandbox/returns.ts, which calls save().

  providerReturnByRefundId(refundId: string): ProviderReturn | undefined {
    return this.providerReturns.get(refundId);
  }

  providerReturnById(returnId: string): ProviderReturn | undefined {
    for (const r of this.providerReturns.values()) if (r.returnId === returnId) return r;
    return undefined;
  }

  allProviderReturns(): ProviderReturn[] {
    return [...this.providerReturns.values()];
  }

  addProviderReturn(entry: ProviderReturn): void {
    this.providerReturns.set(entry.refundId, entry);
    this.save();
  }

  /** A received payment of the provider API by its event id, with its charge. */
  paymentByEventId(eventId: string): { charge: Charge; payment: Payment } | undefined {
    for (const charge of this.charges.values()) {
      const payment = charge.payments.find((p) => p.eventId === eventId);
      if (payment) return { charge, payment };
    }
    return undefined;
  }

  pixWebhook(chave: string): PixWebhook | undefined {
    return this.pixWebhooks.get(chave);
  }

  setPixWebhook(hook: PixWebhook): void {
    this.pixWebhooks.set(hook.chave, hook);
    this.save();
  }

  deletePixWebhook(chave: string): boolean {
    const had = this.pixWebhooks.delete(chave);
    if (had) this.save();
    return had;
  }
}

/**
 * JSON has neither bigint nor Date: both are written tagged and read back as themselves. `this[key]`
 * is the value before Date.prototype.toJSON turned it into a string.
 */
function tag(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const raw = this[key];
  if (raw instanceof Date) return { $date: raw.toISOString() };
  if (typeof raw === 'bigint') return { $bigint: raw.toString() };
  return value;
}

function revive(_key: string, value: unknown): unknown {
  if (typeof value === 'object' && value !== null) {
    const v = value as Record<string, unknown>;
    if (typeof v.$date === 'string') return new Date(v.$date);
    if (typeof v.$bigint === 'string') return BigInt(v.$bigint);
  }
  return value;
}

/** `chg_3f9a...`: 22 hex digits (88 random bits), so the charge's txid is exactly 25 characters. */
export function newId(prefix: 'chg' | 'stl' | 'evt' | 'rtn'): string {
  return `${prefix}_${randomBytes(11).toString('hex')}`;
}

/** 256 random bits, base64url: opaque and safe in a URL path without escaping. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

export function txidOf(chargeId: string): string {
  return chargeId.replace(/[^A-Za-z0-9]/g, '').slice(0, 25);
}
