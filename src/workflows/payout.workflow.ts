import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  log,
  patched,
  proxyActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type {
  ChainActivities,
  ChargeReconciliation,
  PayoutBookkeepingActivities,
  ProviderActivities,
  RefundKind,
} from '../activities';
import {
  BOOKKEEPING,
  CHARGE_CREATION,
  CHARGE_RECONCILIATION,
  TREASURY_TRANSFER,
  untilDeadlineOptions,
} from './activity-options';
import {
  amend,
  isTerminal,
  transition,
  type FailureReason,
  type PayoutRecord,
  type PayoutStatus,
} from '../domain/payout';
import { formatCentavos, parseDecimal, usdtUnitsFromDecimal } from '../domain/money';
import type { ProviderEvent } from '../domain/provider-event';
import { startPartnerCallback } from './callback.workflow';
import { upsertPayoutSearchAttributes } from './search-attributes';
import {
  awaitChargeUpdate,
  getPayoutQuery,
  providerEventSignal,
  type PayoutWorkflowInput,
} from './payout.contract';

const bookkeeping =
  proxyActivities<
    Pick<
      PayoutBookkeepingActivities,
      | 'recordPayout'
      | 'recordLatePayment'
      | 'alertSettlementOverdue'
      | 'alertLateSettlement'
      | 'alertSettlementBelowMinimum'
    >
  >(BOOKKEEPING);
const charging = proxyActivities<Pick<ProviderActivities, 'createPixCharge'>>(CHARGE_CREATION);
const reconciling = proxyActivities<Pick<ProviderActivities, 'fetchChargeStatus'>>(CHARGE_RECONCILIATION);
const treasury =
  proxyActivities<Pick<ChainActivities, 'sendTreasuryTransfer' | 'confirmTreasuryTransfer'>>(
    TREASURY_TRANSFER,
  );

/**
 * Patch ids of behaviour added while payouts were running: a run that reached these points under
 * older code replays without them, every new run takes them.
 */
const RECONCILE_AT_EXPIRY = 'reconcile-charge-at-expiry';
const REFUND_FAILED_PAID_PAYOUT = 'refund-failed-paid-payout';
const REFUNDS_WHILE_RUNNING = 'refunds-while-running';

/**
 * A settlement the provider reported as completed gets at least this long to reach its
 * confirmations, even when the report arrives just before the settlement deadline: failing a payout
 * whose USDT is already on chain over that race would be worse than finishing a few minutes late.
 */
const MIN_VERIFY_WINDOW_MS = 10 * 60 * 1000;

/** Activities bounded by the settlement deadline: when it passes, Temporal stops retrying them. */
function untilDeadline(deadline: number) {
  return proxyActivities<
    Pick<ProviderActivities, 'requestSettlement'> & Pick<ChainActivities, 'verifyUsdtTransfer'>
  >(untilDeadlineOptions(deadline - Date.now()));
}

/** A refusal the activity marked as final, as opposed to running out of time or attempts. */
function isRefusal(err: ActivityFailure): boolean {
  const cause = err.cause;
  return (
    cause instanceof ApplicationFailure &&
    (cause.nonRetryable || cause.type === 'ProviderRejected' || cause.type === 'ChainRejected')
  );
}

type Settlement = Extract<ProviderEvent, { type: 'settlement.completed' | 'settlement.failed' }>;
type Payment = Extract<ProviderEvent, { type: 'pix.received' }>;

function toFailure(check: 'reverted' | 'mismatch'): 'transfer_reverted' | 'transfer_mismatch' {
  return check === 'reverted' ? 'transfer_reverted' : 'transfer_mismatch';
}

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
  /** The one payment this payout settles: exactly amount_brl, on this payout's charge. */
  let payment: Payment | undefined;
  let settlement: Settlement | undefined;
  const appliedEventIds = new Set<string>();
  // Payments that cannot be judged yet: before the charge id is known, or while the charge's status
  // is being reconciled at expiry (then only those paid by the expiry may settle).
  let holdPayments = false;
  const heldPayments: Payment[] = [];
  // Received BRL that will not be settled: each opens a refund case, as soon as it is known (the
  // refund desk below), whatever the payout does meanwhile.
  const refundsDue: { event: Payment; kind: RefundKind; reason: string }[] = [];
  // Settlement events for a payout that has ended: alerted once the payout has ended.
  const lateEvents: { event: Settlement; reason: string }[] = [];

  /** Decides what a received payment is for this payout: the one to settle, or one to refund. */
  function receivePayment(event: Payment): void {
    if (isTerminal(payout.status)) {
      return refund(event, 'late_payment', `payment received after the payout was ${payout.status}`);
    }
    if (holdPayments || payout.providerChargeId === undefined) {
      heldPayments.push(event);
      return;
    }
    if (event.chargeId !== payout.providerChargeId) {
      return refund(event, 'wrong_charge', `payment on charge ${event.chargeId}, not this payout's charge`);
    }
    if (!isChargeAmount(event.amountBrl)) {
      const expected = formatCentavos(BigInt(payout.amountCentavos));
      return refund(event, 'wrong_amount', `paid ${event.amountBrl} BRL on a charge of ${expected} BRL`);
    }
    if (payment !== undefined) {
      // A static BR Code can be paid twice; only the first payment is settled.
      return refund(event, 'second_payment', 'second payment for the same PIX charge');
    }
    payment = event;
  }

  function isChargeAmount(amountBrl: string): boolean {
    try {
      return parseDecimal(amountBrl, 2) === BigInt(payout.amountCentavos);
    } catch {
      return false;
    }
  }

  function refund(event: Payment, kind: RefundKind, reason: string): void {
    log.warn('payment will not be settled: refund case', { eventId: event.eventId, kind });
    refundsDue.push({ event, kind, reason });
  }

  setHandler(getPayoutQuery, () => payout);
  setHandler(awaitChargeUpdate, async () => {
    await condition(() => payout.pixCopyPaste !== '' || isTerminal(payout.status));
    return payout;
  });
  // Synchronous on purpose: the SDK runs signal handlers before the main code resumes in the same
  // activation, so an event that arrives together with the last activity result is still seen here
  // before the workflow returns, and lands in lateEvents rather than vanishing.
  setHandler(providerEventSignal, (event) => {
    // Providers deliver at least once; each event changes the payout at most once.
    if (appliedEventIds.has(event.eventId)) return;
    appliedEventIds.add(event.eventId);
    if (event.externalId !== payout.id) {
      log.warn('provider event for another payout ignored', { eventId: event.eventId, type: event.type });
      return;
    }
    if (event.type === 'pix.received') return receivePayment(event);
    if (isTerminal(payout.status)) {
      lateEvents.push({ event, reason: `settlement reported after the payout was ${payout.status}` });
    } else if (settings.settlementMode !== 'provider') {
      log.warn('provider settlement event ignored in treasury mode', { eventId: event.eventId });
    } else if (payout.providerChargeId !== undefined && event.chargeId !== payout.providerChargeId) {
      log.warn('settlement event for another charge ignored', { eventId: event.eventId });
    } else if (settlement === undefined) {
      // Kept even while PENDING: deliveries are unordered, and the settlement is only acted on in
      // PROCESSING anyway.
      settlement = event;
    } else {
      log.warn('second settlement event ignored', { eventId: event.eventId, type: event.type });
    }
  });

  const now = () => new Date().toISOString(); // workflow time: deterministic on replay
  const save = async (next: PayoutRecord) => {
    const ended = isTerminal(next.status) && !isTerminal(payout.status);
    payout = next;
    upsertPayoutSearchAttributes(payout);
    await bookkeeping.recordPayout(payout, workflowInfo().workflowId, workflowInfo().runId);
    // Partner callback, started once the read model agrees, so a partner who GETs on receipt sees it.
    if (ended) await startPartnerCallback(payout);
  };
  const fail = async (reason: FailureReason) => {
    log.warn('payout failed', { payoutId: payout.id, reason });
    await save(transition(payout, 'FAILED', now(), { failureReason: reason }));
    // The payer's BRL was received and nothing will be settled for it: it goes back.
    if (payment !== undefined && patched(REFUND_FAILED_PAID_PAYOUT)) {
      refund(payment, 'payout_failed', `payout failed (${reason}) after its payment was received`);
    }
  };
  const moveTo = (to: PayoutStatus, changes: Partial<PayoutRecord> = {}) =>
    save(transition(payout, to, now(), changes));

  let payoutEnded = false;
  // Runs from before the desk opened refund cases only once the payout had ended.
  const refundsWhileRunning = patched(REFUNDS_WHILE_RUNNING);
  const refundDesk = openRefundDesk();
  await save(payout);
  await runPayout();
  // Every path of runPayout ends here with the payout COMPLETED or FAILED, saved.
  payoutEnded = true;
  await refundDesk;
  // Events may keep arriving while these activities run; the loop takes them too.
  while (refundsDue.length > 0 || lateEvents.length > 0) {
    await openDueRefunds();
    await handleLateEvents();
  }
  return payout;

  /** Opens the refund cases due while the payout runs; returns once it has ended and none is left. */
  async function openRefundDesk(): Promise<void> {
    for (;;) {
      await condition(() => (refundsWhileRunning && refundsDue.length > 0) || payoutEnded);
      if (refundsDue.length === 0) return;
      await openDueRefunds();
    }
  }

  async function openDueRefunds(): Promise<void> {
    for (let due = refundsDue.shift(); due !== undefined; due = refundsDue.shift()) {
      const { event, kind, reason } = due;
      await bookkeeping.recordLatePayment({ payoutId: payout.id, event, reason, kind });
    }
  }

  async function handleLateEvents(): Promise<void> {
    for (let late = lateEvents.shift(); late !== undefined; late = lateEvents.shift()) {
      const { event } = late;
      if (event.type === 'settlement.completed') {
        await bookkeeping.alertLateSettlement({ payoutId: payout.id, status: payout.status, event });
      } else {
        log.info('settlement failure reported for an ended payout', {
          eventId: event.eventId,
          status: payout.status,
        });
      }
    }
  }

  async function runPayout(): Promise<void> {
    try {
      const charge = await charging.createPixCharge({
        payoutId: payout.id,
        amountCentavos: payout.amountCentavos,
        pixKey: payout.pixKey,
        pixKeyType: payout.pixKeyType,
        expiresInSeconds: settings.chargeExpirySeconds,
      });
      await save(
        amend(payout, now(), { pixCopyPaste: charge.pixCopyPaste, providerChargeId: charge.chargeId }),
      );
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      return fail('charge_creation_failed');
    }
    // A payment signalled before the charge was recorded is judged now that its id is known.
    for (const held of heldPayments.splice(0)) receivePayment(held);

    // The state, not the condition's result, decides: a payment applied in the same activation as
    // the expiry timer fired was received in time and must be settled, not dropped.
    await condition(() => payment !== undefined, settings.chargeExpirySeconds * 1000);
    if (payment === undefined && patched(RECONCILE_AT_EXPIRY)) await reconcileAtExpiry();
    if (payment === undefined) return fail('charge_expired');
    await moveTo('PROCESSING', { paidAt: payment.paidAt, paymentEventId: payment.eventId });

    if (settings.settlementMode === 'provider') await settleThroughProvider();
    else await settleFromTreasury();
  }

  /**
   * Webhooks are at least once but can be lost: before an unpaid charge fails, the provider is asked
   * for its status. A payment made at or before the charge's expiry (both times on the provider's
   * clock) is settled as if notified in time; any other is refunded.
   */
  async function reconcileAtExpiry(): Promise<void> {
    holdPayments = true;
    let status: ChargeReconciliation;
    try {
      status = await reconciling.fetchChargeStatus({
        payoutId: payout.id,
        chargeId: payout.providerChargeId!,
      });
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      log.error('charge status refused by the provider; failing as expired', { payoutId: payout.id });
      status = { status: 'unknown_charge' };
    }
    holdPayments = false;
    const reported = status.status === 'unknown_charge' ? [] : status.payments;
    for (const p of reported) {
      if (appliedEventIds.has(p.eventId)) continue;
      appliedEventIds.add(p.eventId);
      heldPayments.push(p);
    }
    const expiresAt = status.status === 'unknown_charge' ? undefined : Date.parse(status.expiresAt);
    for (const held of heldPayments.splice(0)) {
      if (expiresAt !== undefined && Date.parse(held.paidAt) <= expiresAt) receivePayment(held);
      else refund(held, 'late_payment', 'payment made after the PIX charge expired');
    }
    if (payment !== undefined) {
      log.info('payment found by reconciliation at expiry', {
        payoutId: payout.id,
        eventId: payment.eventId,
      });
    }
  }

  async function settleThroughProvider(): Promise<void> {
    const deadline = Date.now() + settings.settlementTimeoutSeconds * 1000;
    try {
      await untilDeadline(deadline).requestSettlement({
        payoutId: payout.id,
        chargeId: payout.providerChargeId!,
        receiverWallet: payout.receiverWallet,
        chainId: settings.chainId,
      });
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      // The provider refused: it will send nothing. Merely running out of time is different: an
      // attempt whose answer was lost may have been accepted, so a settlement event may still come.
      if (isRefusal(err)) return fail('settlement_request_failed');
    }
    const remaining = deadline - Date.now();
    if (remaining > 0) await condition(() => settlement !== undefined, remaining);
    const outcome = settlement;
    if (outcome === undefined) return fail('settlement_timeout');
    if (outcome.type === 'settlement.failed') {
      log.warn('provider reported settlement failure', {
        payoutId: payout.id,
        reason: outcome.failureReason,
      });
      return fail('provider_reported_failure');
    }
    if (outcome.chainId !== settings.chainId) return fail('transfer_mismatch');

    const amountUnits = usdtUnitsFromDecimal(outcome.amountUsdt).toString();
    const verdict = await verifyOnChain(
      outcome.txHash,
      amountUnits,
      Math.max(deadline, Date.now() + MIN_VERIFY_WINDOW_MS),
    );
    if (verdict !== 'confirmed') return fail(verdict);
    await complete(outcome.txHash, amountUnits, outcome.confirmedAt);
  }

  /**
   * The worker pays the guaranteed minimum from the operator's treasury (the margin is the spread
   * above it). No timeout ever fails this path: once the transaction is signed it may be mined at any
   * time, and FAILED must mean no USDT moved. Past the settlement timeout an alert calls a human
   * instead. FAILED comes only from a proof that the transfer cannot land: a refusal before anything
   * was signed, a revert, or the nonce consumed by another transaction.
   */
  async function settleFromTreasury(): Promise<void> {
    const overdueAt = Date.now() + settings.settlementTimeoutSeconds * 1000;
    const amountUnits = payout.minAmountUsdtUnits;
    const transfer = { payoutId: payout.id, to: payout.receiverWallet, amountUnits };
    const result = await alertWhenOverdue(overdueAt, async () => {
      let txHash: `0x${string}`;
      try {
        ({ txHash } = await treasury.sendTreasuryTransfer(transfer));
      } catch (err) {
        if (!(err instanceof ActivityFailure)) throw err;
        return { verdict: 'settlement_request_failed' as const };
      }
      try {
        const check = await treasury.confirmTreasuryTransfer({
          ...transfer,
          minConfirmations: settings.settlementConfirmations,
        });
        return { txHash, verdict: check === 'confirmed' ? check : toFailure(check) };
      } catch (err) {
        if (!(err instanceof ActivityFailure)) throw err;
        // Only the proof that the nonce went to another transaction is final (see the activity).
        return { txHash, verdict: 'settlement_request_failed' as const };
      }
    });
    if (result.verdict !== 'confirmed') return fail(result.verdict);
    // No provider confirms anything in this mode: confirmed_at is when the transfer was seen with
    // its required confirmations.
    await complete(result.txHash!, amountUnits, now());
  }

  /** Runs `work`; if it is still going at `at`, raises the overdue alert once and keeps waiting. */
  async function alertWhenOverdue<T>(at: number, work: () => Promise<T>): Promise<T> {
    const timer = new CancellationScope();
    const alarm = timer
      .run(() => sleep(Math.max(0, at - Date.now())))
      .then(
        () => 'overdue' as const,
        () => 'cancelled' as const,
      );
    const running = work();
    const first = await Promise.race([
      running.then(
        () => 'done' as const,
        () => 'done' as const,
      ),
      alarm,
    ]);
    if (first === 'overdue') {
      await bookkeeping.alertSettlementOverdue({
        payoutId: payout.id,
        partnerId: payout.partnerId,
        mode: settings.settlementMode,
        overdueSeconds: settings.settlementTimeoutSeconds,
      });
    } else {
      timer.cancel();
    }
    return running;
  }

  async function verifyOnChain(
    txHash: `0x${string}`,
    amountUnits: string,
    deadline: number,
  ): Promise<'confirmed' | 'transfer_reverted' | 'transfer_mismatch' | 'settlement_timeout'> {
    try {
      const check = await untilDeadline(deadline).verifyUsdtTransfer({
        payoutId: payout.id,
        txHash,
        to: payout.receiverWallet,
        amountUnits,
        minConfirmations: settings.settlementConfirmations,
      });
      return check === 'confirmed' ? check : toFailure(check);
    } catch (err) {
      // Not mined, or not deep enough, by the deadline (the activity retries everything else).
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
