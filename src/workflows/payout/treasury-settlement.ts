import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { ChainActivities } from '../../activities';
import type { PayoutRecord } from '../../domain/payout';
import { isRefusal } from '../activity-errors';
import { TREASURY_TRANSFER } from '../activity-options';
import type { PayoutSettings } from '../payout.contract';
import type { Attention } from './attention';
import { ATTENTION_AFTER_MS, type SettlementOutcome } from './settlement-steps';

const treasury =
  proxyActivities<Pick<ChainActivities, 'sendTreasuryTransfer' | 'confirmTreasuryTransfer'>>(
    TREASURY_TRANSFER,
  );

/**
 * The worker pays the guaranteed minimum from the operator's treasury (the margin is the spread
 * above it). Both activities retry until they succeed or are refused for good: once the transaction
 * is signed it may be mined at any time. FAILED comes only from a proof that the transfer cannot
 * land: a refusal before anything was signed, a revert, or the nonce consumed by another
 * transaction. A mismatch on our own mined transaction is retried by the chain activity (alerting,
 * TransferMismatch) until an operator decides; so is a transfer that never lands (overdue alert).
 */
export async function settleFromTreasury(
  payout: PayoutRecord,
  settings: PayoutSettings,
  attention: Attention,
): Promise<SettlementOutcome> {
  const amountUnits = payout.minAmountUsdtUnits;
  const transfer = { payoutId: payout.id, to: payout.receiverWallet, amountUnits };
  try {
    await treasury.sendTreasuryTransfer(transfer);
  } catch (err) {
    if (err instanceof ActivityFailure && isRefusal(err)) {
      return { kind: 'failed', reason: 'settlement_request_failed' };
    }
    throw err;
  }
  let check: Awaited<ReturnType<typeof treasury.confirmTreasuryTransfer>>;
  try {
    check = await attention.whileUnanswered(
      'transfer_unconfirmed',
      'treasury transfer not confirmed: see the worker log (transfer_mismatch, treasury_transfer_repriced) and the treasury nonce',
      ATTENTION_AFTER_MS,
      () =>
        treasury.confirmTreasuryTransfer({ ...transfer, minConfirmations: settings.settlementConfirmations }),
    );
  } catch (err) {
    // Only the proof that the nonce went to another transaction is final (see the activity).
    if (err instanceof ActivityFailure && isRefusal(err)) {
      return { kind: 'failed', reason: 'transfer_nonce_taken' };
    }
    throw err;
  }
  if (check.status === 'reverted') return { kind: 'failed', reason: 'transfer_reverted' };
  // No provider confirms anything in this mode: confirmed_at is when the transfer was seen with its
  // required confirmations. The hash is the mined one (a re-priced replacement, perhaps).
  return { kind: 'completed', txHash: check.txHash, amountUnits, confirmedAt: new Date().toISOString() };
}
