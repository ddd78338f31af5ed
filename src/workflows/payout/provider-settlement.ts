import { condition, log } from '@temporalio/workflow';
import type { SettlementReport } from '../../activities';
import { usdtUnitsFromDecimal } from '../../domain/money';
import type { PayoutRecord } from '../../domain/payout';
import type { PayoutSettings } from '../payout.contract';
import type { Attention } from './attention';
import type { PaymentInbox } from './payment-inbox';
import { ATTENTION_AFTER_MS, oneRound, verifyTransfer, type SettlementOutcome } from './settlement-steps';

/** No report within this long after acceptance: the provider's settlement status is asked. */
const FIRST_STATUS_READ_MS = 30_000;
/** Later reads back off to this; any webhook ends a wait at once. */
const MAX_STATUS_READ_MS = 10 * 60_000;

/** What the provider said happened, from a webhook or from its status endpoint. */
interface Transfer {
  txHash: `0x${string}`;
  amountUsdt: string;
  chainId: number;
  confirmedAt?: string;
}
type Evidence =
  | ({ kind: 'transfer' } & Transfer)
  | { kind: 'failed_before_broadcast'; reason: string }
  | { kind: 'reported_failed'; reason: string }
  | { kind: 'in_progress' }
  | { kind: 'unknown' };

/**
 * The provider converts the payment and sends the USDT; this step turns what it reports into a
 * proof. COMPLETED needs the transfer confirmed on chain and claimed for the payout; FAILED needs the
 * provider's refusal of the request, its status saying it failed with nothing broadcast, or a
 * reverted transfer. A timeout, a silent provider, a transfer not mined yet: the step keeps asking
 * (webhooks, the settlement's status, the chain) for as long as it takes, with the payout's
 * attention items raised meanwhile; an operator's decision is the only other way out.
 */
export async function settleThroughProvider(
  payout: PayoutRecord,
  settings: PayoutSettings,
  inbox: PaymentInbox,
  attention: Attention,
): Promise<SettlementOutcome> {
  const request = () => requestSettlement(payout, settings, inbox, attention);
  const accepted = await request();
  if (accepted === 'refused') return { kind: 'failed', reason: 'settlement_request_failed' };
  // Unanswered, but a report came: the provider took an earlier attempt. Its id is asked again later.
  let settlementId = accepted?.settlementId;

  let reportedFailed = false;
  let nextReadMs = FIRST_STATUS_READ_MS;
  // A repeated request answers the settlement's current state: anything past pending is read at once.
  let readNow = accepted !== undefined && accepted.status !== 'pending';
  /** The transfer the provider last named: verified until the chain proves it one way or the other. */
  let candidate: Transfer | undefined;
  for (;;) {
    let evidence: Evidence;
    const reported =
      !readNow && (await condition(() => inbox.settlementReports.length > 0, nextReadMs))
        ? inbox.settlementReports.shift()
        : undefined;
    if (reported !== undefined) {
      evidence =
        reported.type === 'settlement.completed'
          ? { kind: 'transfer', ...reported }
          : { kind: 'reported_failed', reason: reported.failureReason };
    } else {
      readNow = false;
      if (settlementId === undefined) {
        const again = await request();
        if (again === 'refused') return { kind: 'failed', reason: 'settlement_request_failed' };
        settlementId = again?.settlementId;
      }
      evidence =
        settlementId === undefined ? { kind: 'unknown' } : await readStatus(payout, settlementId, attention);
      nextReadMs = Math.min(nextReadMs * 2, MAX_STATUS_READ_MS);
    }

    if (evidence.kind === 'transfer') {
      if (evidence.chainId === settings.chainId) {
        candidate = evidence;
      } else {
        await attention.raise(
          'transfer_mismatch',
          `provider reports the transfer ${evidence.txHash} on chain ${evidence.chainId}, not ${settings.chainId}`,
        );
      }
    } else if (evidence.kind === 'failed_before_broadcast') {
      if (candidate === undefined) {
        log.warn('provider settlement failed before anything was broadcast', {
          payoutId: payout.id,
          reason: evidence.reason,
        });
        return { kind: 'failed', reason: 'provider_reported_failure' };
      }
      // It named a transaction before: the chain, not the provider's word, decides that one.
      log.error('provider says nothing was broadcast but named a transaction before', {
        payoutId: payout.id,
        txHash: candidate.txHash,
      });
    } else if (evidence.kind === 'reported_failed') {
      // A webhook saying "failed" is the provider's word, not yet the proof that nothing was sent:
      // its status says whether a transaction went out (then the chain decides).
      log.warn('provider reported settlement failure; reading its status', {
        payoutId: payout.id,
        reason: evidence.reason,
      });
      reportedFailed = true;
      readNow = true;
      continue;
    }
    if (candidate === undefined) continue;

    const amountUnits = usdtUnitsFromDecimal(candidate.amountUsdt).toString();
    const verdict = await verifyTransfer(
      payout,
      settings.settlementConfirmations,
      candidate.txHash,
      amountUnits,
    );
    if (verdict === 'reverted') return { kind: 'failed', reason: 'transfer_reverted' };
    if (verdict === 'confirmed') {
      await attention.clear('transfer_mismatch', 'settlement_status_unknown');
      if (reportedFailed) {
        await attention.raise(
          'provider_contradiction',
          `provider reported the settlement failed, but transfer ${candidate.txHash} paid the receiver`,
        );
      }
      const confirmedAt = candidate.confirmedAt ?? new Date().toISOString();
      return { kind: 'completed', txHash: candidate.txHash, amountUnits, confirmedAt };
    }
    if (verdict === 'mismatch') {
      await attention.raise(
        'transfer_mismatch',
        `transfer ${candidate.txHash} carries no unclaimed ${candidate.amountUsdt} USDT to the receiver`,
      );
    }
    // Not provable yet: ask the provider again soon (it may name a newer transaction), then the chain.
    nextReadMs = FIRST_STATUS_READ_MS;
  }
}

/**
 * The settlement request, repeated until accepted (its id and state) or refused. It also returns,
 * unanswered, once a settlement report is in: the provider acted on an attempt whose answer was lost.
 */
async function requestSettlement(
  payout: PayoutRecord,
  settings: PayoutSettings,
  inbox: PaymentInbox,
  attention: Attention,
): Promise<{ settlementId: string; status: string } | 'refused' | undefined> {
  for (;;) {
    const round = await oneRound((a) =>
      a.requestSettlement({
        payoutId: payout.id,
        chargeId: payout.providerChargeId!,
        receiverWallet: payout.receiverWallet,
        chainId: settings.chainId,
      }),
    );
    if ('answer' in round) {
      await attention.clear('settlement_request_unanswered');
      return round.answer;
    }
    if ('refused' in round) {
      log.warn('provider refused the settlement request', { payoutId: payout.id, error: round.refused });
      await attention.clear('settlement_request_unanswered');
      return 'refused';
    }
    if (inbox.settlementReports.length > 0) return undefined;
    // No answer is no refusal: an attempt whose answer was lost may have been accepted, and "charge
    // not paid" may come from a replica that has not seen the payment yet.
    await attention.raise(
      'settlement_request_unanswered',
      `settlement request not answered for ${ATTENTION_AFTER_MS / 60_000} minutes: ${round.unanswered}`,
    );
  }
}

async function readStatus(
  payout: PayoutRecord,
  settlementId: string,
  attention: Attention,
): Promise<Evidence> {
  const round = await oneRound((a) => a.fetchSettlementStatus({ payoutId: payout.id, settlementId }));
  if (!('answer' in round)) {
    const why = 'refused' in round ? round.refused : round.unanswered;
    await attention.raise(
      'settlement_status_unknown',
      `settlement ${settlementId} status unreadable: ${why}`,
    );
    return { kind: 'unknown' };
  }
  return toEvidence(round.answer, settlementId, attention);
}

async function toEvidence(
  status: SettlementReport,
  settlementId: string,
  attention: Attention,
): Promise<Evidence> {
  if (status.status === 'unknown') {
    await attention.raise('settlement_status_unknown', `provider does not know settlement ${settlementId}`);
    return { kind: 'unknown' };
  }
  await attention.clear('settlement_status_unknown');
  if (status.txHash !== undefined && status.amountUsdt !== undefined) {
    return {
      kind: 'transfer',
      txHash: status.txHash,
      amountUsdt: status.amountUsdt,
      chainId: status.chainId,
    };
  }
  if (status.status === 'failed' && status.txHash === undefined) {
    return { kind: 'failed_before_broadcast', reason: status.failureReason ?? 'failed' };
  }
  return { kind: 'in_progress' };
}
