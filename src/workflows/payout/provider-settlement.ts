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
type Evidence =
  | { kind: 'transfer'; txHash: `0x${string}`; amountUsdt: string; chainId: number; confirmedAt?: string }
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
  const accepted = await requestSettlement(payout, settings, attention);
  if (accepted === undefined) return { kind: 'failed', reason: 'settlement_request_failed' };
  const { settlementId } = accepted;

  let reportedFailed = false;
  let nextReadMs = FIRST_STATUS_READ_MS;
  // A repeated request answers the settlement's current state: anything past pending is read at once.
  let readNow = accepted.status !== 'pending';
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
      evidence = await readStatus(payout, settlementId, attention);
      nextReadMs = Math.min(nextReadMs * 2, MAX_STATUS_READ_MS);
    }

    switch (evidence.kind) {
      case 'transfer': {
        if (evidence.chainId !== settings.chainId) {
          await attention.raise(
            'transfer_mismatch',
            `provider reports the transfer ${evidence.txHash} on chain ${evidence.chainId}, not ${settings.chainId}`,
          );
          continue;
        }
        const amountUnits = usdtUnitsFromDecimal(evidence.amountUsdt).toString();
        const verdict = await verifyTransfer(payout, settings.settlementConfirmations, evidence.txHash, amountUnits);
        if (verdict === 'reverted') return { kind: 'failed', reason: 'transfer_reverted' };
        if (verdict === 'confirmed') {
          await attention.clear('transfer_mismatch', 'settlement_status_unknown');
          if (reportedFailed) {
            await attention.raise(
              'provider_contradiction',
              `provider reported the settlement failed, but transfer ${evidence.txHash} paid the receiver`,
            );
          }
          const confirmedAt = evidence.confirmedAt ?? new Date().toISOString();
          return { kind: 'completed', txHash: evidence.txHash, amountUnits, confirmedAt };
        }
        if (verdict === 'mismatch') {
          await attention.raise(
            'transfer_mismatch',
            `transfer ${evidence.txHash} carries no unclaimed ${evidence.amountUsdt} USDT to the receiver`,
          );
        }
        // Not provable yet: ask the provider again soon, it may know a newer transaction.
        nextReadMs = FIRST_STATUS_READ_MS;
        continue;
      }
      case 'failed_before_broadcast':
        log.warn('provider settlement failed before anything was broadcast', {
          payoutId: payout.id,
          reason: evidence.reason,
        });
        return { kind: 'failed', reason: 'provider_reported_failure' };
      case 'reported_failed':
        // A webhook saying "failed" is the provider's word, not yet the proof that nothing was sent:
        // its status says whether a transaction went out (then the chain decides).
        log.warn('provider reported settlement failure; reading its status', {
          payoutId: payout.id,
          reason: evidence.reason,
        });
        reportedFailed = true;
        readNow = true;
        continue;
      case 'unknown':
      case 'in_progress':
        continue;
    }
  }
}

/** The settlement request, repeated until accepted (its id) or refused (undefined). */
async function requestSettlement(
  payout: PayoutRecord,
  settings: PayoutSettings,
  attention: Attention,
): Promise<{ settlementId: string; status: string } | undefined> {
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
      return undefined;
    }
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
    await attention.raise('settlement_status_unknown', `settlement ${settlementId} status unreadable: ${why}`);
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
    return { kind: 'transfer', txHash: status.txHash, amountUsdt: status.amountUsdt, chainId: status.chainId };
  }
  if (status.status === 'failed' && status.txHash === undefined) {
    return { kind: 'failed_before_broadcast', reason: status.failureReason ?? 'failed' };
  }
  return { kind: 'in_progress' };
}
