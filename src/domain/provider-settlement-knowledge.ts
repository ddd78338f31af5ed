/**
 * What the service knows of one payout's provider-mode settlement: facts with their times (request
 * attempts and whether their answers came back, every transaction any source named and what the
 * chain said of it, the provider's status and reports, screening), and `evolve`, the one way a fact
 * changes the knowledge. The verdicts on it are provider-settlement-core.ts's. Pure: no Temporal, no
 * I/O, time comes in as a fact.
 */
import { usdtUnitsFromDecimal } from './money';
import { LONG_WAIT_AFTER_MS, lookCapAfter } from './long-waits';

export type TxHash = `0x${string}`;

/** The provider's settlement states, as its API names them; `unknown`: it answered 404. */
export type ProviderSettlementState = 'pending' | 'broadcast' | 'completed' | 'failed' | 'unknown';

/** What the provider's status endpoint (or a repeated request) says of the settlement. */
export interface ProviderStatus {
  status: ProviderSettlementState;
  txHash?: TxHash;
  amountUsdt?: string;
  chainId?: number;
  failureReason?: string;
}

/** Where a transaction hash came from. Once any source named one, only the chain decides it. */
export type TxSource = 'request_answer' | 'status' | 'webhook';

/** What the chain says of a named transaction, as far as the last check went. */
export type ChainView = 'unchecked' | 'unproven' | 'mismatch' | 'reverted' | 'confirmed';

export interface NamedTransaction {
  txHash: TxHash;
  /** In USDT base units; undefined while no source gave an amount for it. */
  amountUnits: string | undefined;
  /** The provider's own confirmation time, when a webhook gave one. */
  confirmedAt: string | undefined;
  namedBy: TxSource[];
  /** The provider's status calls this transaction's settlement failed (it reverted, by its account). */
  providerCallsFailed: boolean;
  chain: ChainView;
  /** The amount the chain confirmed (and the payout claimed), once `chain` is confirmed. */
  provenUnits: string | undefined;
  /** Its last check found a mismatch, and it was named again with the same amount: checked again now. */
  recheckingMismatch: boolean;
}

/** One try at the settlement request: answered, refused (a 400), or no answer (timeout, 5xx, ...). */
export interface RequestAttempt {
  at: number;
  outcome: 'accepted' | 'refused' | 'unanswered';
  /** A first try in the worker: its failure alone raises nothing, a round of retries follows. */
  local: boolean;
  detail: string;
}

export interface ProviderSettlementKnowledge {
  chainId: number;
  requests: RequestAttempt[];
  /** The provider's id for the settlement, from any answer to the request. */
  settlementId: string | undefined;
  transactions: NamedTransaction[];
  /** What the provider's status endpoint last said of the settlement. */
  providerSays: (ProviderStatus & { at: number }) | undefined;
  /** A webhook said the settlement failed: its status is read before anything else. */
  reportedFailed: { at: number; reason: string } | undefined;
  /** The status endpoint did not answer its last round. */
  statusUnreadable: { at: number; detail: string } | undefined;
  /** Transfers reported on another chain: never a candidate, always an attention item. */
  otherChain: { txHash: TxHash; chainId: number }[];
  /** Screening of the receiver before each request after the first (the first is the payout's). */
  screening: {
    /** When the receiver was last screened clear (or released by an operator: `released`). */
    clearAt: number | undefined;
    released: boolean;
    flagged: { at: number; source: string; detail: string } | undefined;
    unreadable: { at: number; detail: string } | undefined;
  };
  /** When the provider is next asked (its status, or the request while no id is known). */
  nextLookAt: number;
  /** When the settlement's status was last asked for. */
  lastStatusAt: number | undefined;
  lookBackoffMs: number;
  /** When the settlement began (workflow time): how long its wait has lasted. */
  begunAt: number;
  /**
   * The long-wait rules are in force: a wait past a day looks once an hour (src/domain/long-waits.ts),
   * the request included, and a transfer in mismatch keeps its attention item while it is checked
   * again (instead of clearing and raising it with each look). False for a settlement whose run began
   * before these rules (it replays as it ran) until its workflow turns them on.
   */
  longWaitRules: boolean;
  /** The attempts dropped from `requests` (all but the last REQUESTS_KEPT): how many, and whether any may have reached the provider. */
  earlierRequests: { count: number; mayHaveReached: boolean };
  /** Set by any fact that may change what the chain is asked: the candidate is verified again. */
  verifyDue: boolean;
}

export type ProviderSettlementFact =
  | { kind: 'screened_clear'; at: number }
  | { kind: 'screened_flagged'; at: number; source: string; detail: string }
  | { kind: 'screening_unreadable'; at: number; detail: string }
  | {
      kind: 'request_answered';
      at: number;
      local: boolean;
      settlementId: string;
      status: ProviderSettlementState;
      txHash?: TxHash;
    }
  /**
   * A request of this payout is on record from a run this one does not continue (an operator's reset
   * undid it): it may have reached the provider, with the provider's id when an answer gave it.
   * Nothing was screened in this run: the receiver is screened before any request is sent again.
   */
  | { kind: 'requested_by_earlier_run'; at: number; settlementId?: string }
  | { kind: 'request_refused'; at: number; local: boolean; detail: string }
  | { kind: 'request_unanswered'; at: number; local: boolean; detail: string }
  | { kind: 'status_read'; at: number; status: ProviderStatus }
  | { kind: 'status_unreadable'; at: number; detail: string }
  | {
      kind: 'reported_completed';
      at: number;
      txHash: TxHash;
      amountUsdt: string;
      chainId: number;
      confirmedAt: string;
    }
  | { kind: 'reported_failed'; at: number; reason: string }
  /** The long-wait rules are in force from now on (the workflow's patch is in: src/workflows/hand-over.ts). */
  | { kind: 'long_wait_rules'; at: number }
  | {
      kind: 'chain_checked';
      at: number;
      txHash: TxHash;
      /** The amount the chain was asked about ('0': none known, a check for a revert only). */
      amountUnits: string;
      verdict: Exclude<ChainView, 'unchecked'>;
    };

/** No report within this long after acceptance: the provider's settlement status is asked. */
export const FIRST_LOOK_MS = 30_000;
/** Later looks back off to this; any fact ends a wait at once. */
export const MAX_LOOK_MS = 10 * 60_000;

/** Knowledge at the start: the receiver was screened clear right before (the payout's own screening). */
export function beginProviderSettlement(
  chainId: number,
  at: number,
  screenedClear: boolean,
  longWaitRules = true,
): ProviderSettlementKnowledge {
  return {
    chainId,
    requests: [],
    earlierRequests: { count: 0, mayHaveReached: false },
    settlementId: undefined,
    transactions: [],
    providerSays: undefined,
    reportedFailed: undefined,
    statusUnreadable: undefined,
    otherChain: [],
    screening: {
      clearAt: screenedClear ? at : undefined,
      released: !screenedClear,
      flagged: undefined,
      unreadable: undefined,
    },
    nextLookAt: at,
    lastStatusAt: undefined,
    lookBackoffMs: FIRST_LOOK_MS,
    begunAt: at,
    longWaitRules,
    verifyDue: false,
  };
}

// --- Evolve: knowledge plus one fact ---

export function evolve(
  k: ProviderSettlementKnowledge,
  fact: ProviderSettlementFact,
): ProviderSettlementKnowledge {
  const next: ProviderSettlementKnowledge = {
    ...k,
    requests: [...k.requests],
    transactions: k.transactions.map((t) => ({ ...t, namedBy: [...t.namedBy] })),
    otherChain: [...k.otherChain],
    screening: { ...k.screening },
  };
  if (fact.kind === 'status_read' || fact.kind === 'status_unreadable') next.lastStatusAt = fact.at;
  switch (fact.kind) {
    case 'screened_clear':
      next.screening = { ...next.screening, clearAt: fact.at, flagged: undefined, unreadable: undefined };
      return next;
    case 'screened_flagged':
      next.screening.flagged = { at: fact.at, source: fact.source, detail: fact.detail };
      next.screening.unreadable = undefined;
      return next;
    case 'screening_unreadable':
      next.screening.unreadable = { at: fact.at, detail: fact.detail };
      lookLater(next, fact.at);
      return next;
    case 'request_answered':
      next.requests.push({ at: fact.at, outcome: 'accepted', local: fact.local, detail: fact.status });
      keepRecentRequests(next);
      next.settlementId = fact.settlementId;
      // Its status only says when to look: a verdict waits for the status endpoint's own answer.
      if (fact.txHash) name(next, { txHash: fact.txHash }, 'request_answer');
      // A repeated request answers the settlement's current state: anything past pending is read at once.
      next.nextLookAt = fact.status === 'pending' ? fact.at + FIRST_LOOK_MS : fact.at;
      next.lookBackoffMs = FIRST_LOOK_MS;
      return next;
    case 'requested_by_earlier_run':
      next.requests.push({
        at: fact.at,
        outcome: fact.settlementId === undefined ? 'unanswered' : 'accepted',
        local: false,
        detail: 'sent by an earlier run of this payout, before a reset',
      });
      keepRecentRequests(next);
      if (fact.settlementId !== undefined) next.settlementId = fact.settlementId;
      next.screening = { ...next.screening, clearAt: undefined, released: false };
      next.nextLookAt = fact.at;
      return next;
    case 'request_refused':
      next.requests.push({ at: fact.at, outcome: 'refused', local: fact.local, detail: fact.detail });
      keepRecentRequests(next);
      lookLater(next, fact.at);
      return next;
    case 'request_unanswered':
      next.requests.push({ at: fact.at, outcome: 'unanswered', local: fact.local, detail: fact.detail });
      keepRecentRequests(next);
      // A first local try is followed by a round at once; a round's failure waits for the next look
      // when the provider has said something already (reports tell more than another request), or
      // when it has gone unanswered for a day (then hourly).
      if (!fact.local && (heardOfSettlement(next) || waitsLong(next, fact.at))) lookLater(next, fact.at);
      else next.nextLookAt = fact.at;
      return next;
    case 'status_read':
      next.statusUnreadable = undefined;
      next.providerSays = { ...fact.status, at: fact.at };
      takeStatus(next, fact.status);
      lookLater(next, fact.at);
      next.verifyDue = true;
      return next;
    case 'status_unreadable':
      next.statusUnreadable = { at: fact.at, detail: fact.detail };
      lookLater(next, fact.at);
      next.verifyDue = true;
      return next;
    case 'reported_completed':
      if (fact.chainId !== k.chainId) {
        if (!next.otherChain.some((o) => o.txHash === fact.txHash)) {
          next.otherChain.push({ txHash: fact.txHash, chainId: fact.chainId });
        }
        return next;
      }
      name(
        next,
        {
          txHash: fact.txHash,
          amountUnits: unitsOf(fact.amountUsdt),
          confirmedAt: fact.confirmedAt,
        },
        'webhook',
      );
      next.verifyDue = true;
      return next;
    case 'long_wait_rules':
      next.longWaitRules = true;
      return next;
    case 'reported_failed':
      // The provider's word, not the proof that nothing was sent: its status says whether a
      // transaction went out (then the chain decides). Read at once.
      next.reportedFailed = { at: fact.at, reason: fact.reason };
      next.nextLookAt = fact.at;
      return next;
    case 'chain_checked': {
      const tx = next.transactions.find((t) => t.txHash === fact.txHash);
      if (tx && tx.chain !== 'confirmed') {
        // An amount of 0 only stands in for one nobody gave: it proves a revert, never a payment.
        const paid = fact.verdict === 'confirmed' && fact.amountUnits !== '0';
        tx.chain = fact.verdict === 'confirmed' && !paid ? 'mismatch' : fact.verdict;
        if (paid) tx.provenUnits = fact.amountUnits;
        // A check that did not answer (unproven) leaves a mismatch being checked again as it was.
        if (fact.verdict !== 'unproven') tx.recheckingMismatch = false;
      }
      next.verifyDue = false;
      // Reverted: the provider may have sent another since; its status is read at once.
      if (fact.verdict === 'reverted') next.nextLookAt = fact.at;
      return next;
    }
  }
}

/** Past its first day under the long-wait rules. */
function waitsLong(k: ProviderSettlementKnowledge, at: number): boolean {
  return k.longWaitRules && at - k.begunAt >= LONG_WAIT_AFTER_MS;
}

/** How many request attempts the knowledge keeps in full; older ones are counted in `earlierRequests`. */
export const REQUESTS_KEPT = 16;

/** Keeps the knowledge's size bounded however long the request goes unanswered (it is handed over whole). */
function keepRecentRequests(k: ProviderSettlementKnowledge): void {
  while (k.requests.length > REQUESTS_KEPT) {
    const dropped = k.requests.shift()!;
    k.earlierRequests = {
      count: k.earlierRequests.count + 1,
      mayHaveReached: k.earlierRequests.mayHaveReached || dropped.outcome !== 'refused',
    };
  }
}

function lookLater(k: ProviderSettlementKnowledge, at: number): void {
  k.nextLookAt = at + k.lookBackoffMs;
  const cap = k.longWaitRules ? lookCapAfter(at - k.begunAt, MAX_LOOK_MS) : MAX_LOOK_MS;
  k.lookBackoffMs = Math.min(k.lookBackoffMs * 2, cap);
}

function takeStatus(k: ProviderSettlementKnowledge, s: ProviderStatus): void {
  if (s.status === 'unknown' || s.txHash === undefined) return;
  const chainId = s.chainId ?? k.chainId;
  if (chainId !== k.chainId) {
    if (!k.otherChain.some((o) => o.txHash === s.txHash)) k.otherChain.push({ txHash: s.txHash, chainId });
    return;
  }
  const tx = name(k, { txHash: s.txHash, amountUnits: unitsOf(s.amountUsdt) }, 'status');
  if (s.status === 'failed') tx.providerCallsFailed = true;
}

/** Adds a source's naming of a transaction; an amount given once is kept when a later naming has none. */
function name(
  k: ProviderSettlementKnowledge,
  t: { txHash: TxHash; amountUnits?: string | undefined; confirmedAt?: string },
  by: TxSource,
): NamedTransaction {
  let tx = k.transactions.find((x) => x.txHash === t.txHash);
  if (!tx) {
    tx = {
      txHash: t.txHash,
      amountUnits: undefined,
      confirmedAt: undefined,
      namedBy: [],
      providerCallsFailed: false,
      chain: 'unchecked',
      provenUnits: undefined,
      recheckingMismatch: false,
    };
    k.transactions.push(tx);
  } else {
    // Named again (last named is the provider's newest word): moved to the end, the candidate.
    k.transactions = [...k.transactions.filter((x) => x !== tx), tx];
  }
  const amountBefore = tx.amountUnits;
  if (t.amountUnits !== undefined && t.amountUnits !== '0') tx.amountUnits = t.amountUnits;
  if (t.confirmedAt !== undefined) tx.confirmedAt = t.confirmedAt;
  if (!tx.namedBy.includes(by)) tx.namedBy.push(by);
  // A mismatch named again with the same amount is being checked again: its attention item stays up
  // meanwhile (the verdict itself is gone: an operator may not fail it until the chain answers).
  tx.recheckingMismatch =
    (tx.chain === 'mismatch' ||
      (tx.chain !== 'confirmed' && tx.chain !== 'reverted' && tx.recheckingMismatch)) &&
    tx.amountUnits === amountBefore;
  // What the chain said was for an older naming; a new one is checked again unless it is proven.
  if (tx.chain === 'unproven' || tx.chain === 'mismatch') tx.chain = 'unchecked';
  k.verifyDue = true;
  return tx;
}

function unitsOf(amountUsdt: string | undefined): string | undefined {
  if (amountUsdt === undefined) return undefined;
  try {
    return usdtUnitsFromDecimal(amountUsdt).toString();
  } catch {
    return undefined;
  }
}

/** The provider has said anything about a settlement: a report, a status, a transaction. */
export function heardOfSettlement(k: ProviderSettlementKnowledge): boolean {
  return (
    k.transactions.length > 0 ||
    k.otherChain.length > 0 ||
    k.reportedFailed !== undefined ||
    (k.providerSays !== undefined && k.providerSays.status !== 'unknown')
  );
}
