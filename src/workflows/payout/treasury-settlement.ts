import { ActivityFailure, isCancellation, log, proxyActivities } from '@temporalio/workflow';
import type { AttentionKind, ChainActivities } from '../../activities';
import type { PayoutRecord } from '../../domain/payout';
import type { ScreeningVerdict } from '../../domain/screening';
import { isActivityError, isRefusal, lastApplicationFailure } from '../activity-errors';
import { TREASURY_ROUND } from '../activity-options';
import type { PayoutSettings } from '../payout.contract';
import type { Attention } from './attention';
import { ATTENTION_AFTER_MS, type SettlementOutcome } from './settlement-steps';

const treasury =
  proxyActivities<Pick<ChainActivities, 'sendTreasuryTransfer' | 'confirmTreasuryTransfer'>>(TREASURY_ROUND);

/** What a round that ended unanswered last failed with, and the attention item the payout then waits on. */
const WAITS_ON: Readonly<Record<string, AttentionKind>> = {
  TreasuryCannotSend: 'treasury_cannot_send',
  TreasuryNonceGap: 'treasury_nonce_gap',
  ScreeningUnavailable: 'screening_unreadable',
  PaymentReturned: 'payment_returned',
  ChargeStatusUnreadable: 'charge_status_unreadable',
};
const ROUND_KINDS: readonly AttentionKind[] = Object.values(WAITS_ON);

/**
 * The worker pays the guaranteed minimum from the operator's treasury (the margin is the spread
 * above it). Both activities run in rounds until they succeed or are refused for good: once the
 * transaction is signed it may be mined at any time. FAILED comes only from a proof that the transfer
 * cannot land: a refusal before anything was signed, a revert the treasury did not cause, or the
 * nonce consumed by another transaction. A treasury that cannot send (blocked by the token's issuer)
 * is the operator's to fix: the payout waits with an attention item, and a transfer of it mined and
 * reverted for that reason is sent again, at a new nonce, once the treasury can. A mismatch on our
 * own mined transaction is retried by the chain activity (alerting, TransferMismatch) until an
 * operator decides; so is a transfer that never lands (overdue alert).
 */
export async function settleFromTreasury(
  payout: PayoutRecord,
  settings: PayoutSettings,
  attention: Attention,
  onFlagged: (flag: Extract<ScreeningVerdict, { kind: 'flagged' }>) => Promise<'refund' | 'release'>,
  /** An operator released the payout after the receiver was flagged: its transfers are signed unscreened. */
  released = false,
): Promise<SettlementOutcome> {
  const amountUnits = payout.minAmountUsdtUnits;
  const transfer = {
    payoutId: payout.id,
    to: payout.receiverWallet,
    amountUnits,
    // Read again at the PIX provider right before signing: a payment returned meanwhile is not paid.
    ...(payout.providerChargeId !== undefined &&
      payout.paymentEventId !== undefined && {
        chargeId: payout.providerChargeId,
        paymentEventId: payout.paymentEventId,
      }),
  };
  for (;;) {
    let sent: Awaited<ReturnType<typeof treasury.sendTreasuryTransfer>>;
    try {
      sent = await inRounds(attention, () =>
        treasury.sendTreasuryTransfer(released ? { ...transfer, released } : transfer),
      );
    } catch (err) {
      if (err instanceof ActivityFailure && isRefusal(err)) {
        return { kind: 'failed', reason: 'settlement_request_failed' };
      }
      throw err;
    }
    if ('flagged' in sent) {
      // Screened right before signing, nothing signed: the operator refunds the payer or releases it.
      if ((await onFlagged(sent.flagged)) === 'refund') return { kind: 'failed', reason: 'receiver_flagged' };
      released = true;
      continue;
    }
    let check: Awaited<ReturnType<typeof treasury.confirmTreasuryTransfer>>;
    try {
      check = await attention.whileUnanswered(
        'transfer_unconfirmed',
        'treasury transfer not confirmed: see the worker log (transfer_mismatch, treasury_transfer_repriced, treasury_nonce_gap) and the treasury nonce',
        ATTENTION_AFTER_MS,
        () =>
          inRounds(attention, () =>
            treasury.confirmTreasuryTransfer({
              ...transfer,
              minConfirmations: settings.settlementConfirmations,
            }),
          ),
      );
    } catch (err) {
      // Only the proof that the nonce went to another transaction is final (see the activity).
      if (err instanceof ActivityFailure && isRefusal(err)) {
        return { kind: 'failed', reason: 'transfer_nonce_taken' };
      }
      throw err;
    }
    if (check.status === 'reverted') return { kind: 'failed', reason: 'transfer_reverted' };
    if (check.status === 'confirmed') {
      // No provider confirms anything in this mode: confirmed_at is when the transfer was seen with
      // its required confirmations. The hash is the mined one (a re-priced replacement, perhaps).
      return { kind: 'completed', txHash: check.txHash, amountUnits, confirmedAt: new Date().toISOString() };
    }
    // Mined and reverted, the treasury unable to send: no USDT moved and its nonce is spent, so the
    // next send signs a new transfer, which waits until the treasury can send.
    log.warn('treasury transfer reverted by the treasury: sending again once it can send', {
      payoutId: payout.id,
      txHash: check.txHash,
    });
  }
}

/**
 * `step` in rounds until it answers, or throws a refusal. A round that ends unanswered raises the
 * attention item of what it last failed with (the activity's message is the detail, e.g. the gap's
 * nonces) and clears the others; an answer clears them all.
 */
async function inRounds<T>(attention: Attention, step: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      const answer = await step();
      await attention.clear(...ROUND_KINDS);
      return answer;
    } catch (err) {
      if (!isActivityError(err) || isCancellation(err) || isRefusal(err)) throw err;
      const last = lastApplicationFailure(err);
      const kind = last?.type ? WAITS_ON[last.type] : undefined;
      await attention.clear(...ROUND_KINDS.filter((k) => k !== kind));
      if (kind) await attention.raise(kind, last!.message);
    }
  }
}
