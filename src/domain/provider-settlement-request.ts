/**
 * A round of the provider-mode settlement request, as the workflow sees it, turned into the facts the
 * knowledge folds in (provider-settlement-knowledge.ts). Pure: no Temporal, no I/O.
 */
import type {
  ProviderSettlementFact,
  ProviderSettlementState,
  TxHash,
} from './provider-settlement-knowledge';

/**
 * A round of the settlement request as the workflow sees it: a local try, then retries. The local
 * try's failure is `localUnanswered` (it may have reached the provider) or `localNotSent` (the
 * receiver could not be screened before it: nothing was sent).
 */
export type RequestRound = { localUnanswered?: string; localNotSent?: string } & (
  | {
      answer:
        | { settlementId: string; status: string; txHash?: TxHash }
        | { flagged: { source: string; detail: string } };
    }
  | { refused: string; attempt: number | undefined }
  | { unanswered: string }
);

/**
 * The settlement request's round as facts. A refusal proves nothing once an earlier try may have
 * reached the provider: the local try's lost answer, or an earlier attempt of the round (the
 * activity puts its attempt number in the refusal).
 */
export function requestRoundFacts(round: RequestRound, at: number): ProviderSettlementFact[] {
  const facts: ProviderSettlementFact[] = [];
  if (round.localUnanswered !== undefined) {
    facts.push({ kind: 'request_unanswered', at, local: true, detail: round.localUnanswered });
  }
  if (round.localNotSent !== undefined)
    facts.push({ kind: 'screening_unreadable', at, detail: round.localNotSent });
  const local = round.localUnanswered === undefined;
  if ('answer' in round) {
    const answer = round.answer;
    if ('flagged' in answer) {
      // Screened right before the attempt: nothing was requested by it.
      facts.push({
        kind: 'screened_flagged',
        at,
        source: answer.flagged.source,
        detail: answer.flagged.detail,
      });
    } else {
      facts.push({
        kind: 'request_answered',
        at,
        local,
        settlementId: answer.settlementId,
        status: isState(answer.status) ? answer.status : 'pending',
        ...(answer.txHash !== undefined && { txHash: answer.txHash }),
      });
    }
  } else if ('refused' in round) {
    if (round.attempt !== undefined && round.attempt > 1) {
      facts.push({
        kind: 'request_unanswered',
        at,
        local: false,
        detail: 'an earlier attempt was not answered',
      });
    }
    facts.push({ kind: 'request_refused', at, local, detail: round.refused });
  } else {
    facts.push({ kind: 'request_unanswered', at, local: false, detail: round.unanswered });
  }
  return facts;
}

const STATES: readonly string[] = ['pending', 'broadcast', 'completed', 'failed', 'unknown'];
function isState(s: string): s is ProviderSettlementState {
  return STATES.includes(s);
}
