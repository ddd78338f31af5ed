/**
 * The decision core of a provider-mode settlement: from what the service knows about one payout's
 * settlement (provider-settlement-knowledge.ts) alone, the next step and every verdict. Pure: no Temporal, no
 * I/O, time comes in as a fact. The workflow only adds facts (activity results, provider reports,
 * screening) and carries out the step returned; the world simulator (test/simulation) runs the same
 * functions against seeded worlds of providers and chains.
 *
 * The rule it holds (docs/decisions.md, "An unknown is never a verdict"): FAILED needs proof that no
 * USDT moved and none will (`proofNothingMoves`); COMPLETED needs a transfer the chain confirms at the
 * required depth, claimed for this payout. Everything else is a wait, with its attention items.
 */
import type { AttentionKind } from './attention';
import type { FailureReason } from './payout';
import {
  heardOfSettlement,
  type NamedTransaction,
  type ProviderSettlementKnowledge,
  type TxHash,
} from './provider-settlement-knowledge';

export type ProviderSettlementStep =
  | { kind: 'screen' }
  | { kind: 'request' }
  | { kind: 'read_status'; settlementId: string }
  | { kind: 'verify'; txHash: TxHash; amountUnits: string }
  /** Nothing to do until a fact arrives or `until` (workflow time, ms) passes; undefined: no timer. */
  | { kind: 'wait'; until: number | undefined }
  | {
      kind: 'complete';
      txHash: TxHash;
      amountUnits: string;
      confirmedAt: string | undefined;
      /** Items for review the completion raises (the provider said failed, the chain says paid). */
      review: { kind: AttentionKind; detail: string }[];
    }
  | { kind: 'fail'; reason: FailureReason };

// --- The money rule ---

/** Some attempt at the request may have reached the provider (accepted, or its answer lost). */
export function requestMayHaveReached(k: ProviderSettlementKnowledge): boolean {
  return k.earlierRequests.mayHaveReached || k.requests.some((r) => r.outcome !== 'refused');
}

/**
 * The proof that no USDT moved for this settlement and none will, or undefined while there is none.
 * The only way a provider-mode settlement ends FAILED.
 * - Every attempt at the request was refused and the provider never said anything of a settlement:
 *   a refusal proves nothing once any earlier attempt may have reached it.
 * - The provider's status says the settlement failed with nothing broadcast, and no source ever
 *   named a transaction.
 * - Every transaction named on our chain reverted (at the required depth), and the provider's status
 *   calls the settlement failed, naming one of them or none.
 */
export function proofNothingMoves(k: ProviderSettlementKnowledge): FailureReason | undefined {
  if (k.requests.length > 0 && !requestMayHaveReached(k) && !heardOfSettlement(k)) {
    return 'settlement_request_failed';
  }
  const says = k.providerSays;
  if (says?.status !== 'failed') return undefined;
  if (k.transactions.length === 0 && says.txHash === undefined && k.otherChain.length === 0) {
    return 'provider_reported_failure';
  }
  const ours = k.transactions;
  if (ours.length > 0 && ours.every((t) => t.chain === 'reverted')) {
    if (says.txHash === undefined || ours.some((t) => t.txHash === says.txHash)) return 'transfer_reverted';
  }
  return undefined;
}

/** May USDT still move for this settlement? FAILED, and any return of the BRL, need it false. */
export function mayStillMoveUsdt(k: ProviderSettlementKnowledge): boolean {
  return proofNothingMoves(k) === undefined;
}

/**
 * Why an operator may not fail the payout now, or undefined when they may. An operator can vouch for
 * what the provider says outside its API (nothing was sent); never for a transaction the chain has
 * not decided: only its proof ends that.
 */
export function operatorMayNotFail(k: ProviderSettlementKnowledge): string | undefined {
  const open = k.transactions.find((t) => t.chain !== 'reverted' && t.chain !== 'mismatch');
  if (open === undefined) return undefined;
  return `transaction ${open.txHash} was named for this payout and the chain has not decided it: only its proof ends the payout`;
}

// --- Decide: the next step ---

/** The transaction the chain is asked about: the newest named on our chain that is not proven reverted. */
function candidate(k: ProviderSettlementKnowledge): NamedTransaction | undefined {
  return [...k.transactions].reverse().find((t) => t.chain !== 'reverted');
}

export function decide(k: ProviderSettlementKnowledge, now: number): ProviderSettlementStep {
  const confirmed = k.transactions.find((t) => t.chain === 'confirmed');
  if (confirmed) return completion(k, confirmed);
  const proof = proofNothingMoves(k);
  if (proof !== undefined) return { kind: 'fail', reason: proof };

  // The settlement is asked for first, even when a report came before (it is idempotent).
  if (k.requests.length === 0) return k.screening.flagged === undefined ? { kind: 'request' } : wait();
  const tx = candidate(k);
  if (tx && (tx.chain === 'unchecked' || k.verifyDue)) {
    // An amount not given stands in as 0: it proves a revert, never a payment.
    return { kind: 'verify', txHash: tx.txHash, amountUnits: tx.amountUnits ?? '0' };
  }
  // A webhook's "failed" is read back at once, whatever the backoff says: by the status endpoint,
  // or by the request while no id is known.
  const lastAsked = k.settlementId !== undefined ? k.lastStatusAt : k.requests.at(-1)?.at;
  const failedUnread =
    k.reportedFailed !== undefined && (lastAsked === undefined || lastAsked < k.reportedFailed.at);
  if (k.nextLookAt > now && !failedUnread) return { kind: 'wait', until: k.nextLookAt };
  if (k.settlementId !== undefined) return { kind: 'read_status', settlementId: k.settlementId };
  // No id known: the request is (re)sent, each time to a receiver screened clear since the last try.
  if (k.screening.flagged !== undefined) return wait();
  const lastTry = k.requests.at(-1)?.at;
  const screened =
    k.screening.released ||
    (k.screening.clearAt !== undefined && (lastTry === undefined || k.screening.clearAt >= lastTry));
  return screened ? { kind: 'request' } : { kind: 'screen' };
}

/** Nothing to ask until a fact arrives. */
function wait(): ProviderSettlementStep {
  return { kind: 'wait', until: undefined };
}

function completion(k: ProviderSettlementKnowledge, tx: NamedTransaction): ProviderSettlementStep {
  const review: { kind: AttentionKind; detail: string }[] = [];
  if (k.reportedFailed !== undefined || tx.providerCallsFailed || k.providerSays?.status === 'failed') {
    review.push({
      kind: 'provider_contradiction',
      detail: `provider reported the settlement failed, but transfer ${tx.txHash} paid the receiver`,
    });
  }
  return {
    kind: 'complete',
    txHash: tx.txHash,
    amountUnits: tx.provenUnits!,
    confirmedAt: tx.confirmedAt,
    review,
  };
}

/**
 * The attention items the settlement waits on now, with their details: what operators see (`admin
 * payouts attention`). Derived from knowledge, so an item is open exactly while its reason holds.
 */
export function attentionOf(k: ProviderSettlementKnowledge): Partial<Record<AttentionKind, string>> {
  const open: Partial<Record<AttentionKind, string>> = {};
  const last = k.requests.at(-1);
  // A local try's lost answer alone raises nothing: its round follows at once.
  const quietLocalTry = last?.local === true && last.outcome === 'unanswered';
  if (k.settlementId === undefined && last !== undefined && !quietLocalTry && last.outcome !== 'accepted') {
    open.settlement_request_unanswered =
      last.outcome === 'refused'
        ? `settlement request not answered: refused after an earlier attempt may have reached the provider: ${last.detail}`
        : `settlement request not answered: ${last.detail}`;
  }
  if (k.statusUnreadable) {
    open.settlement_status_unknown = `settlement ${k.settlementId} status unreadable: ${k.statusUnreadable.detail}`;
  } else if (k.providerSays?.status === 'unknown') {
    open.settlement_status_unknown = `provider does not know settlement ${k.settlementId}`;
  }
  const mismatch = mismatchOf(k);
  if (mismatch) open.transfer_mismatch = mismatch;
  if (k.screening.flagged) {
    const f = k.screening.flagged;
    open.receiver_flagged = requestMayHaveReached(k)
      ? `receiver flagged by ${f.source} after a settlement request may have reached the provider (${f.detail}): ` +
        'no request is sent again; the provider and the chain decide, or an operator'
      : `receiver flagged by ${f.source} before the settlement was requested (${f.detail}): nothing was sent; ` +
        'an operator fails the payout (the payer is refunded)';
  }
  if (k.screening.unreadable) {
    open.screening_unreadable = `receiver cannot be screened before the settlement request is sent again: ${k.screening.unreadable.detail}`;
  }
  return open;
}

function mismatchOf(k: ProviderSettlementKnowledge): string | undefined {
  if (k.transactions.some((t) => t.chain === 'confirmed')) return undefined;
  const tx = candidate(k);
  // Checked again after a naming of the same amount: the item stays up (under the long-wait rules).
  const rechecking =
    k.longWaitRules && (tx?.chain === 'unchecked' || tx?.chain === 'unproven') && tx.recheckingMismatch;
  if (tx?.chain === 'mismatch' || rechecking) {
    const amount = tx.amountUnits === undefined ? 'the' : `${tx.amountUnits} units of`;
    return `transfer ${tx.txHash} carries no unclaimed ${amount} USDT to the receiver`;
  }
  if (tx !== undefined && k.providerSays?.status === 'failed' && k.providerSays.txHash !== tx.txHash) {
    return `transfer ${tx.txHash} was named for this payout and is not proven on chain, while the provider says the settlement failed: only the chain decides it`;
  }
  const reverted = [...k.transactions].reverse().find((t) => t.chain === 'reverted');
  if (reverted && tx === undefined) {
    return `transfer ${reverted.txHash} reverted on chain; waiting for the provider to call it failed or name another`;
  }
  const other = k.otherChain.at(-1);
  if (other)
    return `provider reports the transfer ${other.txHash} on chain ${other.chainId}, not ${k.chainId}`;
  return undefined;
}
