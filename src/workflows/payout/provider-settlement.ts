import { condition, isCancellation, log, proxyActivities } from '@temporalio/workflow';
import type { ScreeningActivities, SettlementReport } from '../../activities';
import type { AttentionKind } from '../../domain/attention';
import type { PayoutRecord } from '../../domain/payout';
import { attentionOf, decide, operatorMayNotFail } from '../../domain/provider-settlement-core';
import {
  beginProviderSettlement,
  evolve,
  type ProviderSettlementFact,
  type ProviderSettlementKnowledge,
  type ProviderStatus,
} from '../../domain/provider-settlement-knowledge';
import { LONG_WAIT_AFTER_MS } from '../../domain/long-waits';
import { requestRoundFacts } from '../../domain/provider-settlement-request';
import { isActivityError } from '../activity-errors';
import { SCREENING_ROUND } from '../activity-options';
import { boundsItsWaits } from '../hand-over';
import type { PayoutSettings } from '../payout.contract';
import type { Attention } from './attention';
import type { PaymentInbox, SettlementEvent } from './payment-inbox';
import { oneRound, verifyTransfer, type SettlementOutcome } from './settlement-steps';

const screening = proxyActivities<Pick<ScreeningActivities, 'screenReceiver'>>(SCREENING_ROUND);

/** The attention items the provider settlement's knowledge decides (attentionOf); it raises and clears only these. */
const DECIDED_HERE: readonly AttentionKind[] = [
  'settlement_request_unanswered',
  'settlement_status_unknown',
  'transfer_mismatch',
  'receiver_flagged',
  'screening_unreadable',
];

/**
 * What the payout knows of its provider settlement, kept outside the step that gathers it: an
 * operator's decision cancels the step, and a decision the knowledge refuses resumes it from there.
 */
export class ProviderSettlementBook {
  knowledge: ProviderSettlementKnowledge | undefined;

  /**
   * Begins from a request of the payout on record from a run an operator's reset undid: the provider
   * may be settling it, so the settlement follows it rather than deciding the payout anew.
   */
  followEarlierRequest(chainId: number, at: number, settlementId: string | undefined): void {
    const begun = beginProviderSettlement(chainId, at, false);
    this.knowledge = evolve(begun, {
      kind: 'requested_by_earlier_run',
      at,
      ...(settlementId !== undefined && { settlementId }),
    });
  }

  /** Why an operator may not fail the payout now (a named transaction the chain has not decided). */
  vetoFail(): string | undefined {
    return this.knowledge === undefined ? undefined : operatorMayNotFail(this.knowledge);
  }
}

/**
 * The provider converts the payment and sends the USDT. This step carries out what the decision core
 * (src/domain/provider-settlement-core.ts) asks, and turns every answer, report and chain check into a
 * fact it folds in (src/domain/provider-settlement-knowledge.ts): the core alone decides COMPLETED (a transfer the chain confirms, claimed for the
 * payout), FAILED (proof nothing moved or will), or what to ask next. Webhooks end a wait at once.
 */
export async function settleThroughProvider(
  payout: PayoutRecord,
  settings: PayoutSettings,
  inbox: PaymentInbox,
  attention: Attention,
  book: ProviderSettlementBook,
  /** An operator released the receiver after a flag: requests are sent without screening it again. */
  released: boolean,
  /** Called before each step: may hand the payout over to a new run (it then throws). */
  mayHandOver: () => Promise<void>,
): Promise<SettlementOutcome> {
  // The long-wait rules come in once a wait is long or a transfer mismatches (below): a settlement
  // begun before them replays as it ran.
  book.knowledge ??= beginProviderSettlement(settings.chainId, Date.now(), !released, false);
  const learn = (fact: ProviderSettlementFact) => {
    book.knowledge = evolve(book.knowledge!, fact);
  };
  for (;;) {
    await mayHandOver();
    for (let r = inbox.settlementReports.shift(); r !== undefined; r = inbox.settlementReports.shift()) {
      learn(reportFact(r));
    }
    const k = book.knowledge;
    const waitsLong =
      Date.now() - k.begunAt >= LONG_WAIT_AFTER_MS || k.transactions.some((t) => t.chain === 'mismatch');
    if (!k.longWaitRules && waitsLong && boundsItsWaits()) learn({ kind: 'long_wait_rules', at: Date.now() });
    await followAttention(attention, book.knowledge);
    const step = decide(book.knowledge, Date.now());
    switch (step.kind) {
      case 'complete':
        for (const item of step.review) await attention.raise(item.kind, item.detail);
        return {
          kind: 'completed',
          txHash: step.txHash,
          amountUnits: step.amountUnits,
          confirmedAt: step.confirmedAt ?? new Date().toISOString(),
        };
      case 'fail':
        log.warn('provider settlement failed, with proof that no USDT moved', {
          payoutId: payout.id,
          reason: step.reason,
        });
        return { kind: 'failed', reason: step.reason };
      case 'wait': {
        const reported = () => inbox.settlementReports.length > 0;
        if (step.until === undefined) await condition(reported);
        else await condition(reported, Math.max(1, step.until - Date.now()));
        break;
      }
      case 'screen':
        learn(await screenAgain(payout));
        break;
      case 'request': {
        const round = await oneRound((a) =>
          a.requestSettlement({
            payoutId: payout.id,
            chargeId: payout.providerChargeId!,
            receiverWallet: payout.receiverWallet,
            chainId: settings.chainId,
            ...(released && { released }),
          }),
        );
        const { localFailure, ...rest } = round;
        // A local try that could not screen the receiver sent nothing: no lost answer to fear.
        const local =
          localFailure === undefined
            ? {}
            : localFailure.type === 'ScreeningUnavailable'
              ? { localNotSent: localFailure.message }
              : { localUnanswered: localFailure.message };
        for (const fact of requestRoundFacts({ ...rest, ...local }, Date.now())) learn(fact);
        break;
      }
      case 'read_status': {
        const round = await oneRound((a) =>
          a.fetchSettlementStatus({ payoutId: payout.id, settlementId: step.settlementId }),
        );
        const at = Date.now();
        learn(
          'answer' in round
            ? { kind: 'status_read', at, status: statusOf(round.answer) }
            : {
                kind: 'status_unreadable',
                at,
                detail: 'refused' in round ? round.refused : round.unanswered,
              },
        );
        break;
      }
      case 'verify': {
        const verdict = await verifyTransfer(
          payout,
          settings.settlementConfirmations,
          step.txHash,
          step.amountUnits,
        );
        learn({
          kind: 'chain_checked',
          at: Date.now(),
          txHash: step.txHash,
          amountUnits: step.amountUnits,
          verdict: verdict === 'unanswered' ? 'unproven' : verdict,
        });
        break;
      }
    }
  }
}

/** Raises what the knowledge says the settlement waits on, clears what it no longer does. */
async function followAttention(attention: Attention, k: ProviderSettlementKnowledge): Promise<void> {
  const open = attentionOf(k);
  await attention.clear(...DECIDED_HERE.filter((kind) => open[kind] === undefined));
  for (const kind of DECIDED_HERE) {
    const detail = open[kind];
    if (detail !== undefined) await attention.raise(kind, detail);
  }
}

/** A report by webhook, as a fact. */
function reportFact(r: SettlementEvent): ProviderSettlementFact {
  const at = Date.now();
  if (r.type === 'settlement.completed') {
    return {
      kind: 'reported_completed',
      at,
      txHash: r.txHash,
      amountUsdt: r.amountUsdt,
      chainId: r.chainId,
      confirmedAt: r.confirmedAt,
    };
  }
  log.warn('provider reported settlement failure; reading its status', {
    externalId: r.externalId,
    reason: r.failureReason,
  });
  return { kind: 'reported_failed', at, reason: r.failureReason };
}

function statusOf(report: SettlementReport): ProviderStatus {
  if (report.status === 'unknown') return { status: 'unknown' };
  return {
    status: report.status,
    chainId: report.chainId,
    ...(report.txHash !== undefined && { txHash: report.txHash }),
    ...(report.amountUsdt !== undefined && { amountUsdt: report.amountUsdt }),
    ...(report.failureReason !== undefined && { failureReason: report.failureReason }),
  };
}

/** The receiver screened again before the request is sent again (a round: an unreadable source is a fact too). */
async function screenAgain(payout: PayoutRecord): Promise<ProviderSettlementFact> {
  try {
    const verdict = await screening.screenReceiver({ payoutId: payout.id, wallet: payout.receiverWallet });
    const at = Date.now();
    // Asked without `unlessRequested`: only a verdict comes back.
    if (verdict.kind === 'flagged')
      return { kind: 'screened_flagged', at, source: verdict.source, detail: verdict.detail };
    return { kind: 'screened_clear', at };
  } catch (err) {
    if (!isActivityError(err) || isCancellation(err)) throw err;
    return { kind: 'screening_unreadable', at: Date.now(), detail: messageOf(err) };
  }
}

function messageOf(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause ?? err;
  return cause instanceof Error ? cause.message : String(cause);
}
