import { ActivityFailure, isCancellation, log, patched, proxyActivities, sleep } from '@temporalio/workflow';
import type { AttentionKind, ChainActivities } from '../../activities';
import { PAYMENT_RETURNED_IN_FULL } from '../../activities/failure-types';
import { TREASURY_BURST_MS, treasuryPauseAfter } from '../../domain/long-waits';
import type { PayoutRecord } from '../../domain/payout';
import type { ScreeningVerdict } from '../../domain/screening';
import { isActivityError, isRefusal, lastApplicationFailure } from '../activity-errors';
import { TREASURY_LOOK, TREASURY_ROUND } from '../activity-options';
import { boundsItsWaits } from '../hand-over';
import type { PayoutSettings } from '../payout.contract';
import type { Attention } from './attention';
import { ATTENTION_AFTER_MS, closeTreasuryRounds, type SettlementOutcome } from './settlement-steps';

type TreasuryActivities = Pick<ChainActivities, 'sendTreasuryTransfer' | 'confirmTreasuryTransfer'>;
type Flag = Extract<ScreeningVerdict, { kind: 'flagged' }>;
const inRound = proxyActivities<TreasuryActivities>(TREASURY_ROUND);
/** One attempt: how a long wait looks, once per pause (src/domain/long-waits.ts). */
const inOneLook = proxyActivities<TreasuryActivities>(TREASURY_LOOK);

/** What a round that ended unanswered last failed with, and the attention item the payout then waits on. */
const WAITS_ON: Readonly<Record<string, AttentionKind>> = {
  TreasuryCannotSend: 'treasury_cannot_send',
  TreasuryNonceGap: 'treasury_nonce_gap',
  ScreeningUnavailable: 'screening_unreadable',
  PaymentReturned: 'payment_returned',
  ChargeStatusUnreadable: 'charge_status_unreadable',
  TreasuryTransferCancelling: 'receiver_flagged',
};
const ROUND_KINDS: readonly AttentionKind[] = Object.values(WAITS_ON);

/**
 * Where the treasury settlement stands, kept outside the step: an operator's decision cancels the
 * step and a refused one resumes it, and a long wait hands it to the payout's next run.
 */
export interface TreasuryBook {
  /** An operator released the payout after the receiver was flagged: its transfers are signed unscreened. */
  released: boolean;
  /** `confirm` once a transfer is signed for the payout: the next run confirms it, sending nothing. */
  stage: 'send' | 'confirm';
  /** Since when (workflow time) the current stage has gone unanswered; undefined while it answers. */
  unansweredSince: number | undefined;
  /**
   * A flag on the receiver no operator released, seen while a transfer was signed for the payout (so
   * that transfer is confirmed, or cancelled at its nonce): should it not land, nothing new is signed,
   * the operator decides.
   */
  flag?: Flag;
  /**
   * Handed over by an earlier run: the step resumes at `stage`. Otherwise (the first call, or a call
   * after an operator's refused decision) it starts by sending, which re-sends a transfer already signed.
   */
  handedOver: boolean;
}

export function beginTreasurySettlement(released: boolean): TreasuryBook {
  return { released, stage: 'send', unansweredSince: undefined, handedOver: false };
}

/**
 * The worker pays the guaranteed minimum from the operator's treasury (the margin is the spread
 * above it). Both activities run in rounds until they succeed or are refused for good: once the
 * transaction is signed it may be mined at any time. FAILED comes only from a proof that the transfer
 * cannot land: a refusal before anything was signed, a revert the treasury did not cause, or the
 * nonce consumed by another transaction. A treasury that cannot send (blocked by the token's issuer)
 * is the operator's to fix: the payout waits with an attention item, and a transfer of it mined and
 * reverted for that reason is sent again, at a new nonce, once the treasury can. A mismatch on our
 * own mined transaction is retried by the chain activity (alerting, TransferMismatch) until an
 * operator decides; so is a transfer that never lands (overdue alert). A receiver flagged while its
 * transfer waits unmined gets a cancel at the transfer's nonce: whichever is mined decides, the
 * cancel ending the payout FAILED receiver_flagged (its payer refunded).
 */
export async function settleFromTreasury(
  payout: PayoutRecord,
  settings: PayoutSettings,
  attention: Attention,
  /** 'signed': a refund was refused because a transfer is signed for the payout after all. */
  onFlagged: (
    flag: Extract<ScreeningVerdict, { kind: 'flagged' }>,
  ) => Promise<'refund' | 'release' | 'signed'>,
  book: TreasuryBook,
  /** Called between looks of a long wait: may hand the payout over to a new run (it then throws). */
  mayHandOver: () => Promise<void>,
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
  const waits = { attention, book, mayHandOver };
  if (!book.handedOver) book.stage = 'send';
  book.handedOver = false;
  for (;;) {
    if (book.stage === 'send') {
      let sent: Awaited<ReturnType<TreasuryActivities['sendTreasuryTransfer']>> | undefined;
      try {
        // A flag seen while a transfer was signed: that transfer is sent again, nothing new is signed.
        const how = book.released ? { released: true } : book.flag !== undefined ? { onlyResend: true } : {};
        sent = await inRounds(waits, (treasury) => treasury.sendTreasuryTransfer({ ...transfer, ...how }));
      } catch (err) {
        if (!(err instanceof ActivityFailure && isRefusal(err))) throw err;
        if ((await closeTreasuryRounds(payout.id)) !== 'signed') {
          // The payer got the payment back in full before anything was signed: nothing to send or refund.
          const returned =
            lastApplicationFailure(err)?.type === PAYMENT_RETURNED_IN_FULL &&
            patched('payment-returned-in-full');
          return { kind: 'failed', reason: returned ? 'payment_returned' : 'settlement_request_failed' };
        }
        // Refused, yet an earlier attempt signed a transfer: it is confirmed like any other.
        sent = undefined;
      }
      const flag =
        sent === undefined
          ? undefined
          : 'flagged' in sent
            ? sent.flagged
            : 'notSigned' in sent
              ? book.flag
              : undefined;
      if (flag !== undefined) {
        // Screened right before signing (or flagged before), nothing signed: the operator refunds the payer or releases it.
        const decided = await onFlagged(flag);
        if (decided === 'release') {
          book.released = true;
          continue;
        }
        if (decided === 'refund' && (await closeTreasuryRounds(payout.id)) !== 'signed')
          return { kind: 'failed', reason: 'receiver_flagged' };
        // An earlier attempt signed a transfer after all: only its proof ends the payout, and the flag
        // is kept (the transfer is cancelled at once while it waits).
        book.flag = flag;
      }
      book.stage = 'confirm';
    }
    let check: Awaited<ReturnType<TreasuryActivities['confirmTreasuryTransfer']>>;
    try {
      check = await attention.whileUnanswered(
        'transfer_unconfirmed',
        'treasury transfer not confirmed: see the worker log (transfer_mismatch, treasury_transfer_repriced, treasury_nonce_gap) and the treasury nonce',
        ATTENTION_AFTER_MS,
        () =>
          inRounds(waits, (treasury) =>
            treasury.confirmTreasuryTransfer({
              ...transfer,
              minConfirmations: settings.settlementConfirmations,
              ...(!book.released && { cancel: book.flag === undefined ? 'if_flagged' : 'flag_known' }),
            }),
          ),
      );
    } catch (err) {
      // Only the proof that the nonce went to another transaction is final (see the activity).
      if (!(err instanceof ActivityFailure && isRefusal(err))) throw err;
      if (await closedAfterItsDeath(payout.id, roundNamedBy(err))) {
        return { kind: 'failed', reason: 'transfer_nonce_taken' };
      }
      continue;
    }
    if (check.status === 'reverted') {
      if (await closedAfterItsDeath(payout.id, check.round))
        return { kind: 'failed', reason: 'transfer_reverted' };
      continue;
    }
    // The receiver was flagged while the transfer waited unmined, and the cancel took its nonce.
    if (check.status === 'cancelled') {
      if (await closedAfterItsDeath(payout.id, check.round))
        return { kind: 'failed', reason: 'receiver_flagged' };
      continue;
    }
    if (check.status === 'confirmed') {
      // No provider confirms anything in this mode: confirmed_at is when the transfer was seen with
      // its required confirmations. The hash is the mined one (a re-priced replacement, perhaps).
      return { kind: 'completed', txHash: check.txHash, amountUnits, confirmedAt: new Date().toISOString() };
    }
    // Mined and reverted, the treasury unable to send: no USDT moved and its nonce is spent, so the
    // next send signs a new transfer, which waits until the treasury can send.
    book.stage = 'send';
    log.warn('treasury transfer reverted by the treasury: sending again once it can send', {
      payoutId: payout.id,
      txHash: check.txHash,
    });
  }
}

/**
 * Closes the payout's rounds once `round`'s transaction is proven unable to land. True: the payout may
 * fail. False: a newer round is signed (by an attempt still running on some worker after the proof
 * was read), and that one is confirmed in turn. An activity worker that names no round answers for
 * whatever round is open.
 */
async function closedAfterItsDeath(payoutId: string, round: number | undefined): Promise<boolean> {
  const closed = await closeTreasuryRounds(
    payoutId,
    round === undefined ? { openRoundCannotLand: true } : { deadRound: round },
  );
  return closed !== 'signed' || !patched('newer-round-outlives-dead-one');
}

/** The round a refusal of the confirmation names in its details (`{ round }`), when the activity gave it. */
function roundNamedBy(err: ActivityFailure): number | undefined {
  const detail = lastApplicationFailure(err)?.details?.[0] as { round?: unknown } | undefined;
  return typeof detail?.round === 'number' ? detail.round : undefined;
}

/**
 * `step` in rounds until it answers, or throws a refusal. A round that ends unanswered raises the
 * attention item of what it last failed with (the activity's message is the detail, e.g. the gap's
 * nonces) and clears the others; an answer clears them all. Rounds run back to back for the first
 * half hour unanswered; then the payout looks once per pause, one attempt each time, and may hand
 * over to a new run between looks.
 */
async function inRounds<T>(
  {
    attention,
    book,
    mayHandOver,
  }: { attention: Attention; book: TreasuryBook; mayHandOver: () => Promise<void> },
  step: (treasury: TreasuryActivities) => Promise<T>,
): Promise<T> {
  for (;;) {
    const startedAt = Date.now();
    const waited = book.unansweredSince === undefined ? 0 : startedAt - book.unansweredSince;
    const looking = waited >= TREASURY_BURST_MS && boundsItsWaits();
    try {
      const answer = await step(looking ? inOneLook : inRound);
      book.unansweredSince = undefined;
      await attention.clear(...ROUND_KINDS);
      return answer;
    } catch (err) {
      if (!isActivityError(err) || isCancellation(err) || isRefusal(err)) throw err;
      book.unansweredSince ??= startedAt;
      const last = lastApplicationFailure(err);
      const kind = last?.type ? WAITS_ON[last.type] : undefined;
      await attention.clear(...ROUND_KINDS.filter((k) => k !== kind));
      if (kind) await attention.raise(kind, last!.message);
    }
    const unanswered = Date.now() - book.unansweredSince;
    if (unanswered >= TREASURY_BURST_MS && boundsItsWaits()) {
      await mayHandOver();
      await sleep(treasuryPauseAfter(unanswered));
    }
  }
}
