import { condition, proxyActivities } from '@temporalio/workflow';
import type { ScreeningActivities } from '../../activities';
import type { PayoutRecord } from '../../domain/payout';
import { SCREENING } from '../activity-options';
import type { Attention } from './attention';
import type { Decided, OperatorDesk } from './operator-desk';
import { ATTENTION_AFTER_MS } from './settlement-steps';

const screening = proxyActivities<Pick<ScreeningActivities, 'screenReceiver'>>(SCREENING);

/**
 * The receiver screened again right before the USDT is requested or signed (docs/decisions.md D45):
 * a wallet listed since POST is not paid. The payout then waits, neither sent nor failed, until an
 * operator refunds the payer or releases it; a source that cannot be read keeps it retrying, with an
 * attention item raised, never taken as clear.
 */
export async function screenBeforeSending(
  payout: PayoutRecord,
  attention: Attention,
  desk: OperatorDesk,
): Promise<'clear' | Decided> {
  const { id: payoutId, receiverWallet: wallet } = payout;
  const verdict = await attention.whileUnanswered(
    'screening_unreadable',
    `receiver ${wallet} cannot be screened before sending (a source is unreadable): nothing is sent until it is`,
    ATTENTION_AFTER_MS,
    () => screening.screenReceiver({ payoutId, wallet }),
  );
  if (verdict.kind === 'clear') return 'clear';
  await attention.raise(
    'receiver_flagged',
    `receiver ${wallet} flagged by ${verdict.source} before sending (${verdict.detail}): nothing is sent; ` +
      'an operator refunds the payer or releases the payout',
  );
  // Nothing but an operator ends this wait: a flag lifted later does not release money by itself.
  const decided = await desk.untilDecided('refund_or_release', () => condition(() => false));
  await attention.clear('receiver_flagged');
  return decided as Decided;
}
