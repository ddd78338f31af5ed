import { proxyActivities } from '@temporalio/workflow';
import type { RequestedBefore, ScreeningActivities } from '../../activities';
import type { FailureReason, PayoutRecord } from '../../domain/payout';
import type { ScreeningVerdict } from '../../domain/screening';
import { SCREENING } from '../activity-options';
import type { Attention } from './attention';
import { isDecided, type Decided, type OperatorDesk } from './operator-desk';
import { ATTENTION_AFTER_MS } from './settlement-steps';

const screening = proxyActivities<Pick<ScreeningActivities, 'screenReceiver'>>(SCREENING);

type Flag = Extract<ScreeningVerdict, { kind: 'flagged' }>;

/**
 * The receiver screened again once the payment is in, before anything is requested or signed
 * (docs/decisions.md D45): a wallet listed since POST is not paid. A source that cannot be read keeps
 * the payout retrying, with an attention item raised, never taken as clear; an operator may refund
 * the payer meanwhile (nothing was sent), never release it unscreened. The treasury screens once
 * more right before it signs (treasury-send.activities.ts), however long the payout waited for it.
 */
export async function screenBeforeSending(
  payout: PayoutRecord,
  attention: Attention,
  desk: OperatorDesk,
  /**
   * Provider mode: a settlement request of the payout already on record (sent by a run an operator's
   * reset undid) is answered instead of a verdict, and the payout follows that settlement.
   */
  unlessRequested: boolean,
): Promise<'clear' | { signed: Flag } | RequestedBefore | { decided: Decided; refundReason: FailureReason }> {
  const { id: payoutId, receiverWallet: wallet } = payout;
  const verdict = await desk.untilDecided('refund', () =>
    attention.whileUnanswered(
      'screening_unreadable',
      `receiver ${wallet} cannot be screened before sending (a source is unreadable): nothing is sent until it is`,
      ATTENTION_AFTER_MS,
      () => screening.screenReceiver({ payoutId, wallet, ...(unlessRequested && { unlessRequested }) }),
    ),
  );
  if (isDecided(verdict)) return { decided: verdict, refundReason: 'operator_decision' };
  if (verdict.kind === 'requested_before') return verdict;
  if (verdict.kind === 'clear') return 'clear';
  const decided = await decideFlaggedReceiver(payout, attention, desk, verdict);
  return decided === 'signed' ? { signed: verdict } : { decided, refundReason: 'receiver_flagged' };
}

/**
 * A flagged receiver waits, neither sent nor failed, until an operator refunds the payer or releases
 * the payout (alert ReceiverFlagged). A flag lifted later does not release money by itself. 'signed':
 * a treasury transfer turned out to be signed for the payout (a refund was refused for it), so only
 * its proof ends the payout.
 */
export async function decideFlaggedReceiver(
  payout: PayoutRecord,
  attention: Attention,
  desk: OperatorDesk,
  flag: Flag,
): Promise<Decided | 'signed'> {
  await attention.raise(
    'receiver_flagged',
    `receiver ${payout.receiverWallet} flagged by ${flag.source} before sending (${flag.detail}): nothing is ` +
      'sent; an operator refunds the payer or releases the payout',
  );
  const decided = await desk.decideFlagged();
  await attention.clear('receiver_flagged');
  return decided;
}
