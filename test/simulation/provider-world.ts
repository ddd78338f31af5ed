/**
 * A seeded world of everything a provider-mode settlement does not control: the provider (its
 * answers, its reports, its status endpoint, its lies), the chain (mining, reverts, pools that drop,
 * reorganisations), screening and the clock. Each fault is drawn from the world's seed, so a seed
 * replays the world exactly; `truth` is what really happened, for the invariants to judge.
 */
import type { ProviderStatus, TxHash } from '../../src/domain/provider-settlement-knowledge';
import { Random } from './random';

export const CHAIN_ID = 42161;
const BLOCK_MS = 250;
/** A reorganisation never reaches deeper than this; at and below it a block is final. */
export const FINALITY_MS = 15 * 60_000;

/** How the provider's settlement goes, drawn when it creates one. */
type Plan =
  | 'send'
  | 'fail_before_sending'
  | 'revert_then_fail'
  | 'revert_then_resend'
  | 'say_failed_after_sending'
  | 'drop_then_fail'
  | 'stay_pending';

export interface WorldTx {
  hash: TxHash;
  amountUnits: bigint;
  success: boolean;
  sentAt: number;
  minedAt: number | undefined;
  dropped: boolean;
  /** Unmined at this time by a reorganisation, mined again `remineAfter` later. */
  reorg: { at: number; remineAfter: number; flips: boolean } | undefined;
}

export interface Delivery {
  at: number;
  event:
    | { type: 'completed'; txHash: TxHash; amountUsdt: string; chainId: number; confirmedAt: string }
    | { type: 'failed'; reason: string };
}

interface Settlement {
  id: string;
  plan: Plan;
  /** What the status endpoint answers, with the time each state began (stale replicas answer older ones). */
  states: { from: number; status: ProviderStatus }[];
}

export interface WorldOptions {
  /** Reorganisations re-mine a transaction with the same result, or may flip it (before finality). */
  reorgs: 'same_result' | 'flip';
}

type Attempt = 'ok' | 'down' | 'lose_answer' | 'refuse_after_acting' | 'not_paid_yet';

export class ProviderWorld {
  readonly random: Random;
  readonly confirmations: number;
  /** The receiver is listed from this time on (Infinity: never). */
  readonly flagAt: number;
  /** The provider refuses this payout for good (a wallet it cannot pay): nothing is ever created. */
  private readonly refusesForGood: boolean;
  private settlement: Settlement | undefined;
  readonly txs: WorldTx[] = [];
  readonly deliveries: Delivery[] = [];
  /** Request attempts that reached the provider (it acted on them), with their times. */
  readonly reached: number[] = [];
  /** Transactions the provider named to the service (an answer, a status, a delivered report). */
  readonly revealed = new Set<TxHash>();
  private txCount = 0;
  readonly log: string[] = [];
  private readonly faultRate: number;
  /** The provider answers nothing before this time. */
  private readonly outageUntil: number;

  constructor(
    seed: number,
    readonly options: WorldOptions = { reorgs: 'same_result' },
  ) {
    this.random = new Random(seed);
    const r = this.random;
    this.confirmations = r.int(1, 3);
    this.refusesForGood = r.chance(0.08);
    // Some worlds are calm, some a storm; some start with the provider down for hours.
    this.faultRate = r.pick([0.02, 0.1, 0.3, 0.6]);
    this.outageUntil = r.chance(0.2) ? r.int(60_000, 6 * 3600_000) : 0;
    // Listings come at any moment, often during an outage (the case a screening once held wrong).
    this.flagAt = r.chance(0.15)
      ? r.int(1, 3 * 3600_000)
      : this.outageUntil > 0 && r.chance(0.3)
        ? r.int(1, this.outageUntil)
        : Infinity;
  }

  private note(at: number, line: string): void {
    this.log.push(`${fmt(at)} world: ${line}`);
  }

  // --- The provider's API ---

  /** One attempt at POST /settlements. */
  request(
    at: number,
  ): { answer: { settlementId: string; status: string; txHash?: TxHash } } | 'refused' | 'unanswered' {
    if (this.refusesForGood) {
      this.note(at, 'request refused (the provider will never settle this payout)');
      return 'refused';
    }
    const fault = at < this.outageUntil ? 'down' : this.attemptFault();
    if (fault === 'down') {
      this.note(at, 'request: provider down, nothing done');
      return 'unanswered';
    }
    if (fault === 'not_paid_yet' && this.settlement === undefined) {
      this.note(at, 'request: charge not paid yet (lagging replica)');
      return 'unanswered';
    }
    if (fault === 'refuse_after_acting' && this.settlement !== undefined) {
      this.note(at, 'request: 400 although the settlement exists (a gateway, "already exists")');
      return 'refused';
    }
    // Screening's truth: a request that reaches the provider after the flag is a violation.
    this.reached.push(at);
    const s = this.settlement ?? this.create(at);
    const now = this.stateAt(at);
    if (fault === 'lose_answer') {
      this.note(at, `request reached the provider (${s.id}), its answer lost`);
      return 'unanswered';
    }
    this.note(
      at,
      `request answered: ${s.id} ${now.status}${now.txHash ? ` ${now.txHash.slice(0, 10)}` : ''}`,
    );
    if (now.txHash) this.revealed.add(now.txHash);
    return { answer: { settlementId: s.id, status: now.status, ...(now.txHash && { txHash: now.txHash }) } };
  }

  /** One attempt at GET /settlements/{id}. */
  status(at: number, id: string): ProviderStatus | 'unanswered' {
    const s = this.settlement;
    if (at < this.outageUntil || this.random.chance(this.faultRate / 2)) return 'unanswered';
    if (s === undefined || s.id !== id) return { status: 'unknown' };
    // The provider forgot it (a restart): 404 for a while.
    if (this.random.chance(this.faultRate / 10)) return { status: 'unknown' };
    // A lagging replica answers an older state.
    const asOf = this.random.chance(this.faultRate / 3) ? at - this.random.int(0, 600_000) : at;
    const answer = this.stateAt(asOf);
    if (answer.txHash) this.revealed.add(answer.txHash);
    return answer;
  }

  private attemptFault(): Attempt {
    if (!this.random.chance(this.faultRate)) return 'ok';
    return this.random.weighted({ down: 4, lose_answer: 3, refuse_after_acting: 2, not_paid_yet: 1 });
  }

  private stateAt(at: number): ProviderStatus {
    const states = this.settlement?.states ?? [];
    let found: ProviderStatus = { status: 'pending', chainId: CHAIN_ID };
    for (const s of states) if (s.from <= at) found = s.status;
    return found;
  }

  // --- What the provider does once it holds a settlement ---

  private create(at: number): Settlement {
    const r = this.random;
    const plan = r.weighted<Plan>({
      send: 10,
      fail_before_sending: 2,
      revert_then_fail: 1,
      revert_then_resend: 1,
      say_failed_after_sending: 1,
      drop_then_fail: 1,
      stay_pending: 0.5,
    });
    const s: Settlement = {
      id: `stl_${at}`,
      plan,
      states: [{ from: at, status: { status: 'pending', chainId: CHAIN_ID } }],
    };
    this.settlement = s;
    this.note(at, `provider created ${s.id}, plan ${plan}`);
    const t = at + r.int(100, 60_000);
    const amount = BigInt(r.int(17_000_000, 18_000_000));
    switch (plan) {
      case 'send': {
        const tx = this.send(t, amount, true);
        this.then(s, t, { status: 'broadcast', chainId: CHAIN_ID, txHash: tx.hash });
        this.completeWhenMined(s, tx);
        break;
      }
      case 'fail_before_sending':
        this.then(s, t, { status: 'failed', chainId: CHAIN_ID, failureReason: 'no liquidity' });
        this.report(t, { type: 'failed', reason: 'no liquidity' });
        break;
      case 'revert_then_fail': {
        const tx = this.send(t, amount, false);
        this.then(s, t, { status: 'broadcast', chainId: CHAIN_ID, txHash: tx.hash });
        const known = (tx.minedAt ?? t) + r.int(1000, 120_000);
        this.then(s, known, {
          status: 'failed',
          chainId: CHAIN_ID,
          txHash: tx.hash,
          failureReason: 'reverted',
        });
        this.report(known, { type: 'failed', reason: 'reverted' });
        break;
      }
      case 'revert_then_resend': {
        const first = this.send(t, amount, false);
        this.then(s, t, { status: 'broadcast', chainId: CHAIN_ID, txHash: first.hash });
        // Sent again at once, or only after the first revert is final (a provider that waits to be sure).
        const again =
          (first.minedAt ?? t) + (r.chance(0.5) ? r.int(1000, 120_000) : r.int(FINALITY_MS, 2 * 3600_000));
        const second = this.send(again, amount, true);
        this.then(s, again, { status: 'broadcast', chainId: CHAIN_ID, txHash: second.hash });
        this.completeWhenMined(s, second);
        break;
      }
      case 'say_failed_after_sending': {
        // Names the transaction, which pays the receiver, then says failed without it.
        const tx = this.send(t, amount, true);
        this.then(s, t, { status: 'broadcast', chainId: CHAIN_ID, txHash: tx.hash });
        const lie = t + r.int(1000, 300_000);
        this.then(s, lie, { status: 'failed', chainId: CHAIN_ID, failureReason: 'internal error' });
        this.report(lie, { type: 'failed', reason: 'internal error' });
        break;
      }
      case 'drop_then_fail': {
        const tx = this.send(t, amount, true, true);
        this.then(s, t, { status: 'broadcast', chainId: CHAIN_ID, txHash: tx.hash });
        const gone = t + r.int(60_000, 3600_000);
        this.then(s, gone, { status: 'failed', chainId: CHAIN_ID, failureReason: 'dropped' });
        this.report(gone, { type: 'failed', reason: 'dropped' });
        break;
      }
      case 'stay_pending':
        break;
    }
    return s;
  }

  private then(s: Settlement, from: number, status: ProviderStatus): void {
    s.states.push({ from, status });
    s.states.sort((a, b) => a.from - b.from);
  }

  private completeWhenMined(s: Settlement, tx: WorldTx): void {
    const at = (tx.minedAt ?? tx.sentAt) + this.random.int(0, 30_000);
    // A provider bug: the amount it reports is not the one it sent (the chain disagrees: a mismatch).
    const reported = this.random.chance(this.faultRate / 10) ? tx.amountUnits + 1n : tx.amountUnits;
    const amountUsdt = formatUnits(reported);
    this.then(s, at, { status: 'completed', chainId: CHAIN_ID, txHash: tx.hash, amountUsdt });
    // A provider bug: the report names another chain.
    const chainId = this.random.chance(this.faultRate / 20) ? 1 : CHAIN_ID;
    this.report(at, {
      type: 'completed',
      txHash: tx.hash,
      amountUsdt,
      chainId,
      confirmedAt: new Date(at).toISOString(),
    });
  }

  /** A webhook: late, lost, or twice. */
  private report(at: number, event: Delivery['event']): void {
    const r = this.random;
    if (r.chance(this.faultRate / 2)) return;
    const copies = r.chance(this.faultRate / 3) ? 2 : 1;
    for (let i = 0; i < copies; i++) {
      const delay = r.chance(0.1) ? r.int(0, 6 * 3600_000) : r.int(0, 120_000);
      this.deliveries.push({ at: at + delay, event });
    }
    this.deliveries.sort((a, b) => a.at - b.at);
  }

  private send(at: number, amountUnits: bigint, success: boolean, dropped = false): WorldTx {
    const r = this.random;
    const hash = `0x${(++this.txCount).toString(16).padStart(64, '0')}` as TxHash;
    const minedAt = dropped ? undefined : at + r.int(250, r.chance(0.1) ? 3600_000 : 20_000);
    const reorg =
      minedAt !== undefined && r.chance(this.faultRate / 4)
        ? {
            at: minedAt + r.int(0, FINALITY_MS - 60_000),
            remineAfter: r.int(250, 30_000),
            flips: this.options.reorgs === 'flip' && r.chance(0.3),
          }
        : undefined;
    const tx: WorldTx = { hash, amountUnits, success, sentAt: at, minedAt, dropped, reorg };
    this.txs.push(tx);
    this.note(
      at,
      `tx ${hash.slice(0, 10)} sent (${success ? 'pays' : 'reverts'}${dropped ? ', will be dropped' : ''})`,
    );
    return tx;
  }

  // --- The chain ---

  /** Where the transaction stands at `at`: mined (with its block's time and result), or not. */
  private onChain(tx: WorldTx, at: number): { minedAt: number; success: boolean } | undefined {
    if (tx.minedAt === undefined || at < tx.minedAt) return undefined;
    if (tx.reorg === undefined || at < tx.reorg.at) return { minedAt: tx.minedAt, success: tx.success };
    const again = tx.reorg.at + tx.reorg.remineAfter;
    if (at < again) return undefined;
    return { minedAt: again, success: tx.reorg.flips ? !tx.success : tx.success };
  }

  /**
   * The service's verifyUsdtTransfer: confirmed (a transfer of exactly `amountUnits` to the receiver,
   * `confirmations` deep), reverted (only once final), mismatch (mined, no such transfer), or no answer.
   */
  verify(
    at: number,
    hash: TxHash,
    amountUnits: string,
  ): 'confirmed' | 'reverted' | 'mismatch' | 'unanswered' {
    if (this.random.chance(this.faultRate / 4)) return 'unanswered';
    const tx = this.txs.find((t) => t.hash === hash);
    const mined = tx && this.onChain(tx, at);
    if (!tx || !mined) return 'unanswered';
    const depth = Math.floor((at - mined.minedAt) / BLOCK_MS) + 1;
    if (!mined.success) return at - mined.minedAt >= FINALITY_MS ? 'reverted' : 'unanswered';
    if (depth < this.confirmations) return 'unanswered';
    return tx.amountUnits.toString() === amountUnits ? 'confirmed' : 'mismatch';
  }

  screen(at: number): 'clear' | 'flagged' | 'unreadable' {
    if (this.random.chance(this.faultRate / 5)) return 'unreadable';
    return at >= this.flagAt ? 'flagged' : 'clear';
  }

  // --- Truth, for the invariants ---

  /** The transfers that paid the receiver once everything has settled. */
  paid(): WorldTx[] {
    return this.txs.filter((t) => this.onChain(t, Number.MAX_SAFE_INTEGER)?.success === true);
  }

  /** Nothing can move any more: every transaction final or dropped, and the provider will send no other. */
  nothingWillMove(at: number): boolean {
    if (this.refusesForGood) return true;
    const s = this.settlement;
    if (s === undefined) return this.reached.length === 0;
    const last = s.states.at(-1)!.status;
    return last.status === 'failed' && this.paid().length === 0 && s.states.at(-1)!.from <= at;
  }

  /** After this time nothing in the world changes by itself any more (only answers to the service). */
  quietAfter(): number {
    const times = [
      ...this.deliveries.map((d) => d.at),
      ...(this.settlement?.states.map((s) => s.from) ?? []),
      ...this.txs.flatMap((t) => [
        t.minedAt ?? 0,
        t.reorg ? t.reorg.at + t.reorg.remineAfter : 0,
        (t.minedAt ?? 0) + FINALITY_MS,
      ]),
      Number.isFinite(this.flagAt) ? this.flagAt : 0,
    ];
    return Math.max(0, ...times);
  }

  /** The provider lied: it sent a transfer and called the settlement failed without naming it. */
  lied(): boolean {
    return this.settlement?.plan === 'say_failed_after_sending';
  }

  /** The provider holds a settlement it has not decided (stuck pending): overdue is all one can say. */
  providerUndecided(): boolean {
    return (
      this.settlement?.plan === 'stay_pending' || (this.settlement === undefined && !this.refusesForGood)
    );
  }
}

function formatUnits(units: bigint): string {
  const s = units.toString().padStart(7, '0');
  return `${s.slice(0, -6)}.${s.slice(-6)}`;
}

export function fmt(ms: number): string {
  if (!Number.isFinite(ms)) return 'never';
  const s = Math.floor(ms / 1000);
  return `t+${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m${String(s % 60).padStart(2, '0')}s`;
}
