/**
 * What both settlement modes share: the outcome they end in, the on-chain verification of a
 * transfer, and the activity proxies of steps that run until proof.
 */
import {
  ApplicationFailure,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
} from '@temporalio/workflow';
import type { ChainActivities, ProviderActivities } from '../../activities';
import type { FailureReason } from '../../domain/payout';
import { isActivityError, isRefusal } from '../activity-errors';
import { asLocal, BOOKKEEPING, PROOF_ROUND, SINGLE_LOCAL_ATTEMPT } from '../activity-options';

export type SettlementOutcome =
  | { kind: 'completed'; txHash: `0x${string}`; amountUnits: string; confirmedAt: string }
  | { kind: 'failed'; reason: FailureReason };

type ProofSteps = Pick<ProviderActivities, 'requestSettlement' | 'fetchSettlementStatus'> &
  Pick<ChainActivities, 'verifyUsdtTransfer'>;

const inRounds = proxyActivities<ProofSteps>(PROOF_ROUND);
/**
 * One attempt as a local activity, the fast path when the provider or the chain answers at once: it
 * runs inside the workflow task that asks for it. Each of these steps is safe to run again when that
 * task is redone (the settlement request is idempotent on the payout id, the verification is a read
 * whose claim is keyed by the payout), and its result is decided again from what the history holds.
 */
const onceLocally = proxyLocalActivities<ProofSteps>(asLocal(SINGLE_LOCAL_ATTEMPT));

/**
 * A round's result: the step's answer, a refusal (final), or no answer yet (try again later). With
 * `localFailure`, the first try in the worker failed before the round ran (what it failed with: a
 * lost answer may have reached the provider all the same). A refusal's `attempt` is the round's
 * attempt that was refused.
 */
export type RoundResult<T> = (
  | { answer: T }
  | { refused: string; attempt: number | undefined }
  | { unanswered: string; failureType: string | undefined }
) & { localFailure?: { message: string; type: string | undefined } };

/** `step` once locally, then a round of remote retries unless refused. */
export async function oneRound<T>(step: (activities: ProofSteps) => Promise<T>): Promise<RoundResult<T>> {
  let localFailure: { message: string; type: string | undefined } | undefined;
  const tried = <R extends object>(r: R) => (localFailure === undefined ? r : { ...r, localFailure });
  for (const activities of [onceLocally, inRounds]) {
    try {
      return tried({ answer: await step(activities) });
    } catch (err) {
      if (!isActivityError(err) || isCancellation(err)) throw err;
      if (isRefusal(err)) return tried({ refused: messageOf(err), attempt: attemptOf(err) });
      if (activities === inRounds) return tried({ unanswered: messageOf(err), failureType: typeOf(err) });
      localFailure = { message: messageOf(err), type: typeOf(err) };
    }
  }
  throw new Error('unreachable');
}

const treasuryRounds = proxyActivities<Pick<ChainActivities, 'closeTreasuryRounds'>>(BOOKKEEPING);

/**
 * Right before a treasury payout ends FAILED (by its own proof or an operator's decision): its rounds
 * are closed for good, so that no attempt of a send still running on some worker can sign for it
 * afterwards. 'signed': a transfer is signed for it and may still land, so the payout does not fail.
 * Undefined for a run that passed this point before the rule (it replays as it ran, without it).
 */
export async function closeTreasuryRounds(
  payoutId: string,
  opts: { openRoundCannotLand?: boolean; deadRound?: number } = {},
): Promise<'closed' | 'signed' | undefined> {
  if (!patched('treasury-closed-on-failure')) return undefined;
  return treasuryRounds.closeTreasuryRounds({ payoutId, ...opts });
}

/** How long a step may go unanswered before its attention item is raised. */
export const ATTENTION_AFTER_MS = 5 * 60 * 1000;

/**
 * Verifies `txHash` pays the receiver `amountUnits` with the confirmations required, and claims it
 * for the payout. 'confirmed' or 'reverted' are proofs. 'mismatch' (mined, but without a transfer of
 * that amount to the receiver that no other payout claimed) and 'unanswered' (not yet mined, not deep
 * enough, a node that does not answer) prove nothing: look again later.
 */
export async function verifyTransfer(
  payout: { id: string; receiverWallet: string },
  confirmations: number,
  txHash: `0x${string}`,
  amountUnits: string,
): Promise<'confirmed' | 'reverted' | 'mismatch' | 'unanswered'> {
  const round = await oneRound((a) =>
    a.verifyUsdtTransfer({
      payoutId: payout.id,
      txHash,
      to: payout.receiverWallet,
      amountUnits,
      minConfirmations: confirmations,
    }),
  );
  if ('answer' in round) {
    return round.answer === 'confirmed' || round.answer === 'reverted' ? round.answer : 'mismatch';
  }
  if ('unanswered' in round && round.failureType === 'TransferMismatch') return 'mismatch';
  if ('refused' in round) {
    // The chain activities refuse only on our own misconfiguration (no such token, wrong chain),
    // which proves nothing about the transfer: keep looking once it is fixed.
    log.error('transfer verification refused', { payoutId: payout.id, txHash, error: round.refused });
  }
  return 'unanswered';
}

function messageOf(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause ?? err;
  return cause instanceof Error ? cause.message : String(cause);
}

/** The attempt a refusal names in its details (`{ attempt }`), when the activity gave it. */
function attemptOf(err: unknown): number | undefined {
  for (let e: unknown = err; e instanceof Error; e = (e as { cause?: unknown }).cause) {
    if (e instanceof ApplicationFailure) {
      const detail = e.details?.[0] as { attempt?: unknown } | undefined;
      return typeof detail?.attempt === 'number' ? detail.attempt : undefined;
    }
  }
  return undefined;
}

/** The type of the last application failure in the chain (a round that timed out wraps its last one). */
function typeOf(err: unknown): string | undefined {
  for (let e: unknown = err; e instanceof Error; e = (e as { cause?: unknown }).cause) {
    if (e instanceof ApplicationFailure) return e.type ?? undefined;
  }
  return undefined;
}
