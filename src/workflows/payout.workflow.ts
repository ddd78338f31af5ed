import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
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
  asLocal,
  BOOKKEEPING,
  CHARGE_CREATION,
  CHARGE_RECONCILIATION,
  SINGLE_LOCAL_ATTEMPT,
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
  cancelPayoutUpdate,
  getPayoutQuery,
  PAYOUT_NOT_CANCELLABLE,
  providerEventSignal,
  type PayoutSettings,
  type PayoutWorkflowInput,
} from './payout.contract';
import { isActivityError, isRefusal } from './activity-errors';

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
/**
 * The quick steps on the payout's critical path, as local activities: they run in the worker within
 * the workflow task that asks for them, so each costs its own round trip instead of a trip through
 * the server (schedule, dispatch to a poller, complete, new workflow task). POST is answered from the
 * first workflow task (PENDING writes, the charge), and a payment is turned into a settlement request
 * in one (PROCESSING write, the request), and a settlement report into COMPLETED in one.
 *
 * Only interim writes (PENDING, PROCESSING) go this way: a local activity's write happens before the
 * workflow task that decided it is recorded, and a task that runs again (its worker died) may decide
 * otherwise with what arrived meanwhile. An interim row is superseded by whatever comes next;
 * COMPLETED and FAILED never change and are answered from the read model alone, so they stay remote
 * activities, written only once decided. The provider calls are idempotent by external id (a
 * repeated charge or settlement request returns the first one), and the on-chain check is a read
 * whose transfer claim is keyed by the payout (docs/decisions.md D32).
 */
const localBookkeeping = proxyLocalActivities<Pick<PayoutBookkeepingActivities, 'recordPayout'>>(
  asLocal(BOOKKEEPING),
);
const localCharging = proxyLocalActivities<Pick<ProviderActivities, 'createPixCharge'>>(
  asLocal(CHARGE_CREATION),
);
const reconciling =
  proxyActivities<Pick<ProviderActivities, 'fetchChargeStatus' | 'cancelPixCharge'>>(CHARGE_RECONCILIATION);
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
const NO_CALLBACK_FOR_UNSEEN_PAYOUT = 'no-callback-for-unseen-payout';
const LOCAL_BOOKKEEPING_AND_CHARGE = 'local-bookkeeping-and-charge';
const LOCAL_SETTLEMENT_STEPS = 'local-settlement-steps';

/**
 * A settlement the provider reported as completed gets at least this long to reach its
 * confirmations, even when the report arrives just before the settlement deadline: failing a payout
 * whose USDT is already on chain over that race would be worse than finishing a few minutes late.
 */
const MIN_VERIFY_WINDOW_MS = 10 * 60 * 1000;

/**
 * One payout, from POST to COMPLETED or FAILED.
 * PENDING: the PIX charge is created and waits, under a durable expiry timer, for its payment.
 * PROCESSING: the USDT is sent (by the provider, or by our treasury) and verified on chain.
 * Every BRL received and not settled opens a refund case, whenever it arrives.
 */
export async function payoutWorkflow(input: PayoutWorkflowInput): Promise<PayoutRecord> {
  const payout = new PayoutProcess(input);
  await payout.open();
  if ((await payout.createCharge()) && (await payout.awaitPayment())) {
    await payout.settle();
  }
  // Every path ends here with the payout COMPLETED or FAILED, saved.
  await payout.closeTheBooks();
  return payout.record;
}

/**
 * The payout's state and its steps, in the order they run. Methods are the business steps; the
 * signal handler only classifies events into state the steps act on.
 */
class PayoutProcess {
  /** The payout as it stands: what queries answer and the read model holds. */
  record: PayoutRecord;
  private readonly settings: PayoutSettings;
  /** The one payment this payout settles: exactly amount_brl, on this payout's charge. */
  private payment: Payment | undefined;
  private settlement: Settlement | undefined;
  private readonly appliedEventIds = new Set<string>();
  /**
   * Payments that cannot be judged yet: before the charge id is known, or while the charge's status
   * is being reconciled at expiry (then only those paid by the expiry may settle).
   */
  private holdPayments = false;
  private readonly heldPayments: Payment[] = [];
  /** Received BRL that will not be settled: each opens a refund case as soon as it is known. */
  private readonly refundsDue: { event: Payment; kind: RefundKind; reason: string }[] = [];
  /** Settlement events for a payout that has ended: alerted once it has ended. */
  private readonly lateSettlements: Settlement[] = [];
  private ended = false;
  private refundsWhileRunning = false;
  private refundDesk: Promise<void> = Promise.resolve();
  /** A cancel is being decided with the provider: payments are held and the expiry waits for it. */
  private cancelling = false;
  /** The wait for the payment is over (paid, or expired and being reconciled): no cancel can win any more. */
  private expiryReached = false;
  /** PENDING writes and the charge run as local activities (runs started before keep remote ones). */
  private localPendingSteps = false;
  /** So do the PROCESSING write, the settlement request and the on-chain check. */
  private localSettlementSteps = false;

  constructor(input: PayoutWorkflowInput) {
    this.settings = input.settings;
    this.record = {
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
  }

  /** Answers queries and takes provider events from now on, opens the refund desk, saves PENDING. */
  async open(): Promise<void> {
    setHandler(getPayoutQuery, () => this.record);
    setHandler(awaitChargeUpdate, async () => {
      await condition(() => this.record.pixCopyPaste !== '' || isTerminal(this.record.status));
      return this.record;
    });
    // Synchronous on purpose: the SDK runs signal handlers before the main code resumes in the same
    // activation, so an event that arrives together with the last activity result is still seen
    // before the workflow returns, and is refunded or alerted rather than lost.
    setHandler(providerEventSignal, (event) => this.onProviderEvent(event));
    setHandler(cancelPayoutUpdate, () => this.cancel(), {
      validator: () => this.refuseCancelUnlessPending(),
    });
    // Runs from before the desk opened refund cases only once the payout had ended.
    this.refundsWhileRunning = patched(REFUNDS_WHILE_RUNNING);
    this.refundDesk = this.runRefundDesk();
    this.localPendingSteps = patched(LOCAL_BOOKKEEPING_AND_CHARGE);
    this.localSettlementSteps = patched(LOCAL_SETTLEMENT_STEPS);
    // As a local activity this write costs POST one database round trip, not a workflow task.
    await this.save(this.record);
  }

  /** The PIX charge the payer pays; false when the provider could not create it (FAILED). */
  async createCharge(): Promise<boolean> {
    try {
      const charger = this.localPendingSteps ? localCharging : charging;
      const charge = await charger.createPixCharge({
        payoutId: this.record.id,
        amountCentavos: this.record.amountCentavos,
        pixKey: this.record.pixKey,
        pixKeyType: this.record.pixKeyType,
        expiresInSeconds: this.settings.chargeExpirySeconds,
      });
      await this.save(
        amend(this.record, now(), { pixCopyPaste: charge.pixCopyPaste, providerChargeId: charge.chargeId }),
      );
    } catch (err) {
      if (!isActivityError(err)) throw err;
      await this.fail('charge_creation_failed');
      return false;
    }
    // A payment signalled before the charge was recorded is judged now that its id is known.
    for (const held of this.heldPayments.splice(0)) this.receivePayment(held);
    return true;
  }

  /**
   * Waits for the charge's payment until it expires, then reconciles with the provider. True once
   * the payout is PROCESSING; false when it FAILED unpaid.
   */
  async awaitPayment(): Promise<boolean> {
    // The state, not the condition's result, decides: a payment applied in the same activation as
    // the expiry timer fired was received in time and must be settled, not dropped.
    await condition(
      () => this.payment !== undefined || isTerminal(this.record.status),
      this.settings.chargeExpirySeconds * 1000,
    );
    // A cancel under way is decided before the expiry is: it may fail the payout or find its payment.
    this.expiryReached = true;
    await condition(() => !this.cancelling);
    if (isTerminal(this.record.status)) return false;
    if (this.payment === undefined && patched(RECONCILE_AT_EXPIRY)) await this.reconcileAtExpiry();
    if (this.payment === undefined) {
      await this.fail('charge_expired');
      return false;
    }
    await this.moveTo('PROCESSING', { paidAt: this.payment.paidAt, paymentEventId: this.payment.eventId });
    return true;
  }

  /**
   * The partner's cancel, decided once against the payment. Payments are held while the provider
   * removes the charge: `removed` means none reached it first, so the payout fails `cancelled` and
   * any payment still in flight is refunded; `already_paid` means the payment wins, it is fetched
   * from the charge's status (its webhook may be late or lost) and the cancel is refused.
   */
  private async cancel(): Promise<PayoutRecord> {
    // A second cancel while one is being decided waits for that decision, then is judged on it.
    await condition(() => !this.cancelling);
    this.refuseCancelUnlessPending();
    // The charge exists before POST answers, so a cancel from the partner finds it; wait in case.
    await condition(() => this.record.providerChargeId !== undefined || isTerminal(this.record.status));
    this.refuseCancelUnlessPending();
    this.cancelling = true;
    this.holdPayments = true;
    try {
      const chargeId = this.record.providerChargeId!;
      const outcome = await reconciling.cancelPixCharge({ payoutId: this.record.id, chargeId });
      if (outcome.kind === 'removed') {
        this.holdPayments = false;
        await this.fail('cancelled');
        // Terminal now: a held payment is refunded as a late one.
        for (const held of this.heldPayments.splice(0)) this.receivePayment(held);
        return this.record;
      }
      const status = await reconciling.fetchChargeStatus({ payoutId: this.record.id, chargeId });
      this.holdPayments = false;
      for (const p of 'payments' in status ? status.payments : []) {
        if (this.appliedEventIds.has(p.eventId)) continue;
        this.appliedEventIds.add(p.eventId);
        this.heldPayments.push(p);
      }
      for (const held of this.heldPayments.splice(0)) this.receivePayment(held);
      throw notCancellable('payout is already being processed');
    } finally {
      this.holdPayments = false;
      for (const held of this.heldPayments.splice(0)) this.receivePayment(held);
      this.cancelling = false;
    }
  }

  /** Throws the partner's 409 unless a cancel can still win: PENDING and no payment applied. */
  private refuseCancelUnlessPending(): void {
    if (isTerminal(this.record.status)) throw notCancellable(`payout is already ${this.record.status}`);
    // Past the expiry (and no cancel under way) reconciliation decides: paid in time, or expired.
    const expiring = this.expiryReached && !this.cancelling;
    if (this.record.status !== 'PENDING' || this.payment !== undefined || expiring) {
      throw notCancellable('payout is already being processed');
    }
  }

  /**
   * Webhooks are at least once but can be lost: before an unpaid charge fails, the provider is asked
   * for its status. A payment made at or before the charge's expiry (both times on the provider's
   * clock) is settled as if notified in time; any other is refunded.
   */
  private async reconcileAtExpiry(): Promise<void> {
    this.holdPayments = true;
    let status: ChargeReconciliation | { status: 'unknown_charge' };
    try {
      status = await reconciling.fetchChargeStatus({
        payoutId: this.record.id,
        chargeId: this.record.providerChargeId!,
      });
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      log.error('charge status refused by the provider; failing as expired', { payoutId: this.record.id });
      status = { status: 'unknown_charge' };
    }
    this.holdPayments = false;
    const reported = status.status === 'unknown_charge' ? [] : status.payments;
    for (const p of reported) {
      if (this.appliedEventIds.has(p.eventId)) continue;
      this.appliedEventIds.add(p.eventId);
      this.heldPayments.push(p);
    }
    const expiresAt = status.status === 'unknown_charge' ? undefined : Date.parse(status.expiresAt);
    for (const held of this.heldPayments.splice(0)) {
      if (expiresAt !== undefined && Date.parse(held.paidAt) <= expiresAt) this.receivePayment(held);
      else this.refund(held, 'late_payment', 'payment made after the PIX charge expired');
    }
    if (this.payment !== undefined) {
      log.info('payment found by reconciliation at expiry', {
        payoutId: this.record.id,
        eventId: this.payment.eventId,
      });
    }
  }

  /** PROCESSING to COMPLETED or FAILED, in the settlement mode fixed at start. */
  async settle(): Promise<void> {
    if (this.settings.settlementMode === 'provider') await this.settleThroughProvider();
    else await this.settleFromTreasury();
  }

  private async settleThroughProvider(): Promise<void> {
    const { record: payout, settings } = this;
    const deadline = Date.now() + settings.settlementTimeoutSeconds * 1000;
    try {
      await locallyFirst(this.localSettlementSteps, deadline, (a) =>
        a.requestSettlement({
          payoutId: payout.id,
          chargeId: payout.providerChargeId!,
          receiverWallet: payout.receiverWallet,
          chainId: settings.chainId,
        }),
      );
    } catch (err) {
      if (!isActivityError(err)) throw err;
      // The provider refused: it will send nothing. Merely running out of time is different: an
      // attempt whose answer was lost may have been accepted, so a settlement event may still come.
      if (isRefusal(err)) return this.fail('settlement_request_failed');
    }
    const remaining = deadline - Date.now();
    if (remaining > 0) await condition(() => this.settlement !== undefined, remaining);
    const outcome = this.settlement;
    if (outcome === undefined) return this.fail('settlement_timeout');
    if (outcome.type === 'settlement.failed') {
      log.warn('provider reported settlement failure', {
        payoutId: payout.id,
        reason: outcome.failureReason,
      });
      return this.fail('provider_reported_failure');
    }
    if (outcome.chainId !== settings.chainId) return this.fail('transfer_mismatch');

    const amountUnits = usdtUnitsFromDecimal(outcome.amountUsdt).toString();
    const verdict = await this.verifyOnChain(
      outcome.txHash,
      amountUnits,
      Math.max(deadline, Date.now() + MIN_VERIFY_WINDOW_MS),
    );
    if (verdict !== 'confirmed') return this.fail(verdict);
    await this.complete(outcome.txHash, amountUnits, outcome.confirmedAt);
  }

  /** Confirmed (and claimed for this payout), or why not; a transfer not deep enough by the deadline times out. */
  private async verifyOnChain(
    txHash: `0x${string}`,
    amountUnits: string,
    deadline: number,
  ): Promise<'confirmed' | 'transfer_reverted' | 'transfer_mismatch' | 'settlement_timeout'> {
    try {
      const check = await locallyFirst(this.localSettlementSteps, deadline, (a) =>
        a.verifyUsdtTransfer({
          payoutId: this.record.id,
          txHash,
          to: this.record.receiverWallet,
          amountUnits,
          minConfirmations: this.settings.settlementConfirmations,
        }),
      );
      return check === 'confirmed' ? check : toFailure(check);
    } catch (err) {
      // Not mined, or not deep enough, by the deadline (the activity retries everything else).
      if (isActivityError(err)) return 'settlement_timeout';
      throw err;
    }
  }

  /**
   * The worker pays the guaranteed minimum from the operator's treasury (the margin is the spread
   * above it). No timeout ever fails this path: once the transaction is signed it may be mined at any
   * time, and FAILED must mean no USDT moved. Past the settlement timeout an alert calls a human
   * instead. FAILED comes only from a proof that the transfer cannot land: a refusal before anything
   * was signed, a revert, or the nonce consumed by another transaction.
   */
  private async settleFromTreasury(): Promise<void> {
    const { record: payout, settings } = this;
    const overdueAt = Date.now() + settings.settlementTimeoutSeconds * 1000;
    const amountUnits = payout.minAmountUsdtUnits;
    const transfer = { payoutId: payout.id, to: payout.receiverWallet, amountUnits };
    const result = await this.alertWhenOverdue(overdueAt, async () => {
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
    if (result.verdict !== 'confirmed') return this.fail(result.verdict);
    // No provider confirms anything in this mode: confirmed_at is when the transfer was seen with
    // its required confirmations.
    await this.complete(result.txHash!, amountUnits, now());
  }

  /** Runs `work`; if it is still going at `at`, raises the overdue alert once and keeps waiting. */
  private async alertWhenOverdue<T>(at: number, work: () => Promise<T>): Promise<T> {
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
        payoutId: this.record.id,
        partnerId: this.record.partnerId,
        mode: this.settings.settlementMode,
        overdueSeconds: this.settings.settlementTimeoutSeconds,
      });
    } else {
      timer.cancel();
    }
    return running;
  }

  private async complete(txHash: string, settledUnits: string, confirmedAt: string): Promise<void> {
    await this.moveTo('COMPLETED', {
      blockchainTxId: txHash,
      settledAmountUsdtUnits: settledUnits,
      confirmedAt,
    });
    if (BigInt(settledUnits) < BigInt(this.record.minAmountUsdtUnits)) {
      await bookkeeping.alertSettlementBelowMinimum({
        payoutId: this.record.id,
        partnerId: this.record.partnerId,
        minAmountUsdtUnits: this.record.minAmountUsdtUnits,
        settledAmountUsdtUnits: settledUnits,
      });
    }
  }

  private async fail(reason: FailureReason): Promise<void> {
    log.warn('payout failed', { payoutId: this.record.id, reason });
    await this.save(transition(this.record, 'FAILED', now(), { failureReason: reason }));
    // The payer's BRL was received and nothing will be settled for it: it goes back.
    if (this.payment !== undefined && patched(REFUND_FAILED_PAID_PAYOUT)) {
      this.refund(this.payment, 'payout_failed', `payout failed (${reason}) after its payment was received`);
    }
  }

  /**
   * After COMPLETED or FAILED: the refund cases still due and the alerts for settlements reported
   * too late. Events may keep arriving while these activities run; the loop takes them too.
   */
  async closeTheBooks(): Promise<void> {
    this.ended = true;
    await this.refundDesk;
    while (this.refundsDue.length > 0 || this.lateSettlements.length > 0) {
      await this.openDueRefunds();
      await this.alertLateSettlements();
    }
  }

  // --- Provider events: classified as they arrive, acted on by the steps above. ---

  private onProviderEvent(event: ProviderEvent): void {
    // Providers deliver at least once; each event changes the payout at most once.
    if (this.appliedEventIds.has(event.eventId)) return;
    this.appliedEventIds.add(event.eventId);
    if (event.externalId !== this.record.id) {
      log.warn('provider event for another payout ignored', { eventId: event.eventId, type: event.type });
      return;
    }
    if (event.type === 'pix.received') return this.receivePayment(event);
    if (isTerminal(this.record.status)) {
      this.lateSettlements.push(event);
    } else if (this.settings.settlementMode !== 'provider') {
      log.warn('provider settlement event ignored in treasury mode', { eventId: event.eventId });
    } else if (
      this.record.providerChargeId !== undefined &&
      event.chargeId !== this.record.providerChargeId
    ) {
      log.warn('settlement event for another charge ignored', { eventId: event.eventId });
    } else if (this.settlement === undefined) {
      // Kept even while PENDING: deliveries are unordered, and the settlement is only acted on in
      // PROCESSING anyway.
      this.settlement = event;
    } else {
      log.warn('second settlement event ignored', { eventId: event.eventId, type: event.type });
    }
  }

  /** Decides what a received payment is for this payout: the one to settle, or one to refund. */
  private receivePayment(event: Payment): void {
    const { record: payout } = this;
    if (isTerminal(payout.status)) {
      return this.refund(event, 'late_payment', `payment received after the payout was ${payout.status}`);
    }
    if (this.holdPayments || payout.providerChargeId === undefined) {
      this.heldPayments.push(event);
      return;
    }
    if (event.chargeId !== payout.providerChargeId) {
      return this.refund(
        event,
        'wrong_charge',
        `payment on charge ${event.chargeId}, not this payout's charge`,
      );
    }
    if (!isAmountOf(payout, event.amountBrl)) {
      const expected = formatCentavos(BigInt(payout.amountCentavos));
      return this.refund(event, 'wrong_amount', `paid ${event.amountBrl} BRL on a charge of ${expected} BRL`);
    }
    if (this.payment !== undefined) {
      // A static BR Code can be paid twice; only the first payment is settled.
      return this.refund(event, 'second_payment', 'second payment for the same PIX charge');
    }
    this.payment = event;
  }

  // --- Refunds and alerts ---

  private refund(event: Payment, kind: RefundKind, reason: string): void {
    log.warn('payment will not be settled: refund case', { eventId: event.eventId, kind });
    this.refundsDue.push({ event, kind, reason });
  }

  /** Opens the refund cases due while the payout runs; returns once it has ended and none is left. */
  private async runRefundDesk(): Promise<void> {
    for (;;) {
      await condition(() => (this.refundsWhileRunning && this.refundsDue.length > 0) || this.ended);
      if (this.refundsDue.length === 0) return;
      await this.openDueRefunds();
    }
  }

  private async openDueRefunds(): Promise<void> {
    for (let due = this.refundsDue.shift(); due !== undefined; due = this.refundsDue.shift()) {
      const { event, kind, reason } = due;
      await bookkeeping.recordLatePayment({ payoutId: this.record.id, event, reason, kind });
    }
  }

  private async alertLateSettlements(): Promise<void> {
    for (
      let event = this.lateSettlements.shift();
      event !== undefined;
      event = this.lateSettlements.shift()
    ) {
      if (event.type === 'settlement.completed') {
        await bookkeeping.alertLateSettlement({
          payoutId: this.record.id,
          status: this.record.status,
          event,
        });
      } else {
        log.info('settlement failure reported for an ended payout', {
          eventId: event.eventId,
          status: this.record.status,
        });
      }
    }
  }

  // --- The read model ---

  private moveTo(to: PayoutStatus, changes: Partial<PayoutRecord> = {}): Promise<void> {
    return this.save(transition(this.record, to, now(), changes));
  }

  private async save(next: PayoutRecord): Promise<void> {
    const ended = isTerminal(next.status) && !isTerminal(this.record.status);
    this.record = next;
    upsertPayoutSearchAttributes(this.record);
    const interim =
      (this.localPendingSteps && next.status === 'PENDING') ||
      (this.localSettlementSteps && next.status === 'PROCESSING');
    const writer = interim ? localBookkeeping : bookkeeping;
    await writer.recordPayout(this.record, workflowInfo().workflowId, workflowInfo().runId);
    if (!ended) return;
    // A payout whose charge could not be created was answered 502: the partner never saw its id, so
    // it gets no callback either.
    const unseen =
      this.record.failureReason === 'charge_creation_failed' && patched(NO_CALLBACK_FOR_UNSEEN_PAYOUT);
    // Partner callback, started once the read model agrees, so a partner who GETs on receipt sees it.
    if (!unseen) await startPartnerCallback(this.record);
  }
}

function notCancellable(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: PAYOUT_NOT_CANCELLABLE, message, nonRetryable: true });
}

/** Workflow time: deterministic on replay. */
function now(): string {
  return new Date().toISOString();
}

function isAmountOf(payout: PayoutRecord, amountBrl: string): boolean {
  try {
    return parseDecimal(amountBrl, 2) === BigInt(payout.amountCentavos);
  } catch {
    return false;
  }
}

type DeadlineBoundActivities = Pick<ProviderActivities, 'requestSettlement'> &
  Pick<ChainActivities, 'verifyUsdtTransfer'>;

/** Activities bounded by the settlement deadline: when it passes, Temporal stops retrying them. */
function untilDeadline(deadline: number) {
  return proxyActivities<DeadlineBoundActivities>(untilDeadlineOptions(deadline - Date.now()));
}

/**
 * One attempt as a local activity, the fast path when the provider or the chain answers at once.
 * Its retries are remote activities: the server keeps their deadline on workflow time, where a local
 * activity's schedule-to-close runs on the worker's clock.
 */
const onceLocally = proxyLocalActivities<DeadlineBoundActivities>(asLocal(SINGLE_LOCAL_ATTEMPT));

/** `step` once locally (when this run does so), then remotely until the deadline unless refused. */
async function locallyFirst<T>(
  local: boolean,
  deadline: number,
  step: (activities: DeadlineBoundActivities) => Promise<T>,
): Promise<T> {
  if (local) {
    try {
      return await step(onceLocally);
    } catch (err) {
      if (!isActivityError(err) || isRefusal(err)) throw err;
    }
  }
  return step(untilDeadline(deadline));
}

type Settlement = Extract<ProviderEvent, { type: 'settlement.completed' | 'settlement.failed' }>;
type Payment = Extract<ProviderEvent, { type: 'pix.received' }>;

function toFailure(check: 'reverted' | 'mismatch'): 'transfer_reverted' | 'transfer_mismatch' {
  return check === 'reverted' ? 'transfer_reverted' : 'transfer_mismatch';
}
