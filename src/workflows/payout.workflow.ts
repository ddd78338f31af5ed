import {
  ActivityFailure,
  condition,
  log,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { PayoutActivities } from '../activities';
import {
  amend,
  isTerminal,
  transition,
  type FailureReason,
  type PayoutRecord,
  type PayoutStatus,
} from '../domain/payout';
import { usdtUnitsFromDecimal } from '../domain/money';
import type { ProviderEvent } from '../domain/provider-event';
import {
  awaitChargeUpdate,
  getPayoutQuery,
  providerEventSignal,
  type PayoutWorkflowInput,
} from './definitions';

// Quick bookkeeping (read model, alerts): retried until they succeed.
const bookkeeping = proxyActivities<PayoutActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

// The PIX charge must exist soon after POST, or the partner is better told it failed.
const charging = proxyActivities<PayoutActivities>({
  startToCloseTimeout: '20 seconds',
  scheduleToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds', nonRetryableErrorTypes: ['ProviderRejected'] },
});

const settling = proxyActivities<PayoutActivities>({
  startToCloseTimeout: '1 minute',
  scheduleToCloseTimeout: '30 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', nonRetryableErrorTypes: ['ProviderRejected', 'ChainRejected'] },
});

// Treasury sends retry until they succeed or are refused for good: once a transaction is signed it
// may be in a mempool, so giving up on a timeout could fail a payout whose USDT still arrives.
const treasury = proxyActivities<PayoutActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', nonRetryableErrorTypes: ['ChainRejected'] },
});

type Settlement = Extract<ProviderEvent, { type: 'settlement.completed' | 'settlement.failed' }>;
type Payment = Extract<ProviderEvent, { type: 'pix.received' }>;

/**
 * One payout, from POST to COMPLETED or FAILED (SPEC.md "States and transitions").
 * PENDING: the PIX charge is created and waits, under a durable expiry timer, for the payment.
 * PROCESSING: the USDT is sent (by the provider, or by our treasury) and verified on chain.
 */
export async function payoutWorkflow(input: PayoutWorkflowInput): Promise<PayoutRecord> {
  const { settings } = input;
  let payout: PayoutRecord = {
    id: input.payoutId,
    partnerId: input.partnerId,
    status: 'PENDING',
    amountCentavos: input.amountCentavos,
    minAmountUsdtUnits: input.minAmountUsdtUnits,
    settledAmountUsdtUnits: '0',
    pixKey: input.pixKey,
    pixKeyType: input.pixKeyType,
    receiverWallet: input.receiverWallet,
    pixCopyPaste: '',
    blockchainTxId: '',
    createdAt: input.createdAt,
    updatedAt: input.createdAt,
    version: 1,
  };
  let payment: Payment | undefined;
  let settlement: Settlement | undefined;
  const appliedEventIds = new Set<string>();
  const latePayments: Payment[] = [];

  setHandler(getPayoutQuery, () => payout);
  setHandler(awaitChargeUpdate, async () => {
    await condition(() => payout.pixCopyPaste !== '' || isTerminal(payout.status));
    return payout;
  });
  setHandler(providerEventSignal, (event) => {
    // Providers deliver at least once; each event changes the payout at most once.
    if (appliedEventIds.has(event.eventId)) return;
    appliedEventIds.add(event.eventId);
    if (event.externalId !== payout.id) {
      log.warn('provider event for another payout ignored', { eventId: event.eventId });
      return;
    }
    if (event.type === 'pix.received') {
      if (payment === undefined && !isTerminal(payout.status)) payment = event;
      else if (isTerminal(payout.status)) latePayments.push(event);
      else log.warn('second PIX payment for one charge', { eventId: event.eventId });
    } else if (settlement === undefined && !isTerminal(payout.status)) {
      settlement = event;
    } else {
      log.warn('settlement event ignored in this state', { eventId: event.eventId, status: payout.status });
    }
  });

  const now = () => new Date().toISOString(); // workflow time: deterministic on replay
  const save = async (next: PayoutRecord) => {
    payout = next;
    await bookkeeping.recordPayout(payout, workflowInfo().workflowId, workflowInfo().runId);
  };
  const fail = async (reason: FailureReason) => {
    log.warn('payout failed', { payoutId: payout.id, reason });
    await save(transition(payout, 'FAILED', now(), { failureReason: reason }));
  };
  const moveTo = (to: PayoutStatus, changes: Partial<PayoutRecord> = {}) => save(transition(payout, to, now(), changes));

  await save(payout);
  await runPayout();
  // A payment that reached us after the payout failed is kept for refund, never settled.
  while (latePayments.length > 0) {
    const late = latePayments.shift()!;
    await bookkeeping.recordLatePayment({ payoutId: payout.id, event: late, reason: `payout ${payout.status}` });
  }
  return payout;

  async function runPayout(): Promise<void> {
    try {
      const charge = await charging.createPixCharge({
        payoutId: payout.id,
        amountCentavos: payout.amountCentavos,
        pixKey: payout.pixKey,
        pixKeyType: payout.pixKeyType,
        expiresInSeconds: settings.chargeExpirySeconds,
      });
      await save(amend(payout, now(), { pixCopyPaste: charge.pixCopyPaste, providerChargeId: charge.chargeId }));
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      return fail('charge_creation_failed');
    }

    if (!(await condition(() => payment !== undefined, settings.chargeExpirySeconds * 1000))) {
      return fail('charge_expired');
    }
    await moveTo('PROCESSING', { paidAt: payment!.paidAt });

    if (settings.settlementMode === 'provider') await settleThroughProvider();
    else await settleFromTreasury();
  }

  async function settleThroughProvider(): Promise<void> {
    const deadline = Date.now() + settings.settlementTimeoutSeconds * 1000;
    try {
      await settling.requestSettlement({
        payoutId: payout.id,
        chargeId: payout.providerChargeId!,
        receiverWallet: payout.receiverWallet,
        chainId: settings.chainId,
      });
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      return fail('settlement_request_failed');
    }
    if (!(await condition(() => settlement !== undefined, Math.max(0, deadline - Date.now())))) {
      return fail('settlement_timeout');
    }
    const outcome = settlement!;
    if (outcome.type === 'settlement.failed') return fail('provider_reported_failure');
    if (outcome.chainId !== settings.chainId) return fail('transfer_mismatch');

    const amountUnits = usdtUnitsFromDecimal(outcome.amountUsdt).toString();
    const verdict = await verifyOnChain(outcome.txHash, amountUnits, deadline);
    if (verdict !== 'confirmed') return fail(verdict);
    await complete(outcome.txHash, amountUnits, outcome.confirmedAt);
  }

  async function settleFromTreasury(): Promise<void> {
    const deadline = Date.now() + settings.settlementTimeoutSeconds * 1000;
    // The treasury pays the guaranteed minimum: the operator's margin is the spread above it.
    const amountUnits = payout.minAmountUsdtUnits;
    let txHash: `0x${string}`;
    try {
      ({ txHash } = await treasury.sendTreasuryTransfer({ payoutId: payout.id, to: payout.receiverWallet, amountUnits }));
    } catch (err) {
      // Only a refusal that cannot heal (e.g. the treasury lacks funds) ends up here; the stored
      // transaction was never mined, so no USDT moved.
      if (!(err instanceof ActivityFailure)) throw err;
      return fail('settlement_request_failed');
    }
    const verdict = await verifyOnChain(txHash, amountUnits, deadline);
    if (verdict !== 'confirmed') return fail(verdict);
    await complete(txHash, amountUnits, now());
  }

  async function verifyOnChain(
    txHash: `0x${string}`,
    amountUnits: string,
    deadline: number,
  ): Promise<'confirmed' | 'transfer_reverted' | 'transfer_mismatch' | 'settlement_timeout'> {
    const verifying = proxyActivities<PayoutActivities>({
      startToCloseTimeout: '30 seconds',
      scheduleToCloseTimeout: Math.max(1000, deadline - Date.now()),
      retry: { initialInterval: '2 seconds', backoffCoefficient: 1.5, maximumInterval: '1 minute' },
    });
    try {
      const check = await verifying.verifyUsdtTransfer({
        txHash,
        to: payout.receiverWallet,
        amountUnits,
        minConfirmations: settings.settlementConfirmations,
      });
      return check === 'confirmed' ? 'confirmed' : check === 'reverted' ? 'transfer_reverted' : 'transfer_mismatch';
    } catch (err) {
      if (err instanceof ActivityFailure) return 'settlement_timeout';
      throw err;
    }
  }

  async function complete(txHash: string, settledUnits: string, confirmedAt: string): Promise<void> {
    await moveTo('COMPLETED', { blockchainTxId: txHash, settledAmountUsdtUnits: settledUnits, confirmedAt });
    if (BigInt(settledUnits) < BigInt(payout.minAmountUsdtUnits)) {
      await bookkeeping.alertSettlementBelowMinimum({
        payoutId: payout.id,
        partnerId: payout.partnerId,
        minAmountUsdtUnits: payout.minAmountUsdtUnits,
        settledAmountUsdtUnits: settledUnits,
      });
    }
  }
}
