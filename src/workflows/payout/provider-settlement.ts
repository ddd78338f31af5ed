import { condition, log } from '@temporalio/workflow';
import type { SettlementReport } from '../../activities';
import { usdtUnitsFromDecimal } from '../../domain/money';
import type { PayoutRecord } from '../../domain/payout';
import type { PayoutSettings } from '../payout.contract';
import type { Attention } from './attention';
import type { PaymentInbox } from './payment-inbox';
import { oneRound, verifyTransfer, type SettlementOutcome } from './settlement-steps';

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
  /** The provider's status calls this transaction's settlement failed (it reverted, by its account). */
  providerFailed?: boolean;
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
  /** The transfer the provider last named: verified until the chain proves it one way or the other. */
  let candidate: Transfer | undefined;
  let reportedFailed = false;
  /** Once the provider has said anything about a settlement, a refusal of the request proves nothing. */
  let heard = false;
  const heardOfSettlement = () => heard || inbox.settlementReports.length > 0;
  const request = () => requestSettlement(payout, settings, attention, heardOfSettlement);

  const accepted = await request();
  if (accepted === 'refused') return { kind: 'failed', reason: 'settlement_request_failed' };
  // Unanswered, but a report came: the provider took an earlier attempt. Its id is asked again later.
  let settlementId = accepted?.settlementId;
  let nextReadMs = FIRST_STATUS_READ_MS;
  // A repeated request answers the settlement's current state: anything past pending is read at once.
  let readNow = accepted !== undefined && accepted.status !== 'pending';
  /** A transaction the chain shows reverted: proof only once the provider's status calls it failed. */
  let reverted: `0x${string}` | undefined;
  for (;;) {
    let evidence: Evidence;
    const reported =
      !readNow && (await condition(() => inbox.settlementReports.length > 0, nextReadMs))
        ? inbox.settlementReports.shift()
        : undefined;
    if (reported !== undefined) {
      heard = true;
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
      if (evidence.kind !== 'unknown' && evidence.kind !== 'in_progress') heard = true;
      nextReadMs = Math.min(nextReadMs * 2, MAX_STATUS_READ_MS);
    }

    if (evidence.kind === 'transfer') {
      if (evidence.providerFailed && evidence.txHash === reverted) {
        log.warn('settlement transaction reverted, and the provider calls it failed', {
          payoutId: payout.id,
          txHash: reverted,
        });
        return { kind: 'failed', reason: 'transfer_reverted' };
      }
      if (evidence.chainId === settings.chainId) {
        // A status that names the same transaction without its amount keeps the amount reported before.
        const known = candidate?.txHash === evidence.txHash ? candidate.amountUsdt : undefined;
        candidate =
          evidence.amountUsdt === '0' && known !== undefined ? { ...evidence, amountUsdt: known } : evidence;
      } else {
        await attention.raise(
          'transfer_mismatch',
          `provider reports the transfer ${evidence.txHash} on chain ${evidence.chainId}, not ${settings.chainId}`,
        );
      }
    } else if (evidence.kind === 'failed_before_broadcast') {
      if (
        candidate === undefined &&
        !inbox.settlementReports.some((r) => r.type === 'settlement.completed')
      ) {
        log.warn('provider settlement failed before anything was broadcast', {
          payoutId: payout.id,
          reason: evidence.reason,
        });
        return { kind: 'failed', reason: 'provider_reported_failure' };
      }
      // It named a transaction before (or a report of one is queued): the chain, not the provider's
      // word, decides that one.
      log.error('provider says nothing was broadcast but named a transaction', { payoutId: payout.id });
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
    if (candidate.txHash === reverted) {
      await attention.raise(
        'transfer_mismatch',
        `transfer ${reverted} reverted on chain; waiting for the provider to call it failed or name another`,
      );
      continue;
    }

    const amountUnits = usdtUnitsFromDecimal(candidate.amountUsdt).toString();
    const checked = await verifyTransfer(
      payout,
      settings.settlementConfirmations,
      candidate.txHash,
      amountUnits,
    );
    // An amount of 0 only stands in for one the provider did not give: it proves a revert, never a payment.
    const verdict = checked === 'confirmed' && amountUnits === '0' ? 'mismatch' : checked;
    if (verdict === 'confirmed') {
      await attention.clear('transfer_mismatch', 'settlement_status_unknown');
      if (reportedFailed || candidate.providerFailed) {
        await attention.raise(
          'provider_contradiction',
          `provider reported the settlement failed, but transfer ${candidate.txHash} paid the receiver`,
        );
      }
      const confirmedAt = candidate.confirmedAt ?? new Date().toISOString();
      return { kind: 'completed', txHash: candidate.txHash, amountUnits, confirmedAt };
    }
    if (verdict === 'reverted') {
      // Proof that this transaction moved nothing; the provider may have sent another since. Its
      // status decides: the same hash called failed ends the payout, another hash is verified.
      if (candidate.providerFailed) return { kind: 'failed', reason: 'transfer_reverted' };
      reverted = candidate.txHash;
      readNow = true;
      continue;
    }
    if (verdict === 'mismatch') {
      await attention.raise(
        'transfer_mismatch',
        `transfer ${candidate.txHash} carries no unclaimed ${candidate.amountUsdt} USDT to the receiver`,
      );
    }
    // Not provable yet: the provider is asked again on the backoff (it may name a newer transaction).
  }
}

/**
 * The settlement request, repeated until accepted (its id and state) or refused. It also returns,
 * unanswered, once a settlement report is in: the provider acted on an attempt whose answer was lost.
 * A refusal after the provider has said anything about a settlement proves nothing (a gateway's 400,
 * a provider confused about an attempt it took): it is alerted and the request asked again.
 */
async function requestSettlement(
  payout: PayoutRecord,
  settings: PayoutSettings,
  attention: Attention,
  heardOfSettlement: () => boolean,
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
    if ('refused' in round && !heardOfSettlement()) {
      log.warn('provider refused the settlement request', { payoutId: payout.id, error: round.refused });
      await attention.clear('settlement_request_unanswered');
      return 'refused';
    }
    const why =
      'refused' in round ? `refused after a settlement was reported: ${round.refused}` : round.unanswered;
    // No answer is no refusal: an attempt whose answer was lost may have been accepted, and "charge
    // not paid" may come from a replica that has not seen the payment yet.
    await attention.raise('settlement_request_unanswered', `settlement request not answered: ${why}`);
    if (heardOfSettlement()) return undefined;
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
  if (status.txHash !== undefined && (status.amountUsdt !== undefined || status.status === 'failed')) {
    return {
      kind: 'transfer',
      txHash: status.txHash,
      // A failed settlement's transaction may come without an amount: only its revert is checked then.
      amountUsdt: status.amountUsdt ?? '0',
      chainId: status.chainId,
      providerFailed: status.status === 'failed',
    };
  }
  if (status.status === 'failed' && status.txHash === undefined) {
    return { kind: 'failed_before_broadcast', reason: status.failureReason ?? 'failed' };
  }
  return { kind: 'in_progress' };
}
