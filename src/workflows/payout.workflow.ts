import {
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  log,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { ChainActivities, PayoutBookkeepingActivities, ProviderActivities } from '../activities';
import { amend, isTerminal, transition, type FailureReason, type PayoutRecord } from '../domain/payout';
import { isActivityError, isRefusal } from './activity-errors';
import {
  asLocal,
  BOOKKEEPING,
  CHARGE_CANCEL,
  CHARGE_CREATION,
  CHARGE_RECONCILIATION,
  PROOF_ROUND,
} from './activity-options';
import { startPartnerCallback } from './callback.workflow';
import {
  awaitChargeUpdate,
  cancelPayoutUpdate,
  getPayoutQuery,
  PAYOUT_NOT_CANCELLABLE,
  PAYOUT_NOT_RESOLVABLE,
  providerEventSignal,
  resolvePayoutUpdate,
  type OperatorDecisionInput,
  type PayoutSettings,
  type PayoutWorkflowInput,
} from './payout.contract';
import { Attention } from './payout/attention';
import { PaymentInbox } from './payout/payment-inbox';
import { settleThroughProvider } from './payout/provider-settlement';
import { ATTENTION_AFTER_MS, type SettlementOutcome } from './payout/settlement-steps';
import { settleFromTreasury } from './payout/treasury-settlement';
import { upsertPayoutSearchAttributes } from './search-attributes';

const bookkeeping =
  proxyActivities<
    Pick<
      PayoutBookkeepingActivities,
      | 'recordPayout'
      | 'recordLatePayment'
      | 'alertSettlementOverdue'
      | 'alertLateSettlement'
      | 'alertSettlementBelowMinimum'
      | 'raiseAttention'
      | 'recordOperatorDecision'
    >
  >(BOOKKEEPING);
/**
 * The quick steps on POST's path, as local activities: they run in the worker within the workflow
 * task that asks for them, so POST is answered from the first workflow task. A local activity acts
 * before the task that decided it is recorded, and a task that runs again (its worker died) may
 * decide otherwise: only interim writes (PENDING, PROCESSING) go this way, and the read model lets
 * a terminal status supersede them whatever their version; the charge is idempotent on the payout id
 * at the provider, and a payment held while its id was unknown is judged on every path that ends the
 * payout (docs/decisions.md).
 */
const localCharging = proxyLocalActivities<Pick<ProviderActivities, 'createPixCharge'>>(
  asLocal(CHARGE_CREATION),
);
const localWrite = proxyLocalActivities<Pick<PayoutBookkeepingActivities, 'recordPayout'>>(
  asLocal(BOOKKEEPING),
);
const reconciling =
  proxyActivities<Pick<ProviderActivities, 'fetchChargeStatus' | 'cancelPixCharge'>>(CHARGE_RECONCILIATION);
const cancelling =
  proxyActivities<Pick<ProviderActivities, 'fetchChargeStatus' | 'cancelPixCharge'>>(CHARGE_CANCEL);
const verifying = proxyActivities<Pick<ChainActivities, 'verifyUsdtTransfer'>>(PROOF_ROUND);

/**
 * One payout, from POST to COMPLETED or FAILED.
 * PENDING: the PIX charge is created and waits, until the provider's expiry, for its payment.
 * PROCESSING: the USDT is sent (by the provider, or by our treasury) and proven on chain.
 * COMPLETED and FAILED need proof; an unknown keeps the payout waiting, with an attention item raised,
 * until proof arrives or an operator decides. Every BRL received and not settled opens a refund case.
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
 * The payout's state and its steps, in the order they run. The payments and settlement reports the
 * provider sends are classified by the inbox; what is overdue is tracked by the attention list.
 */
class PayoutProcess {
  /** The payout as it stands: what queries answer and the read model holds. */
  record: PayoutRecord;
  private readonly settings: PayoutSettings;
  private readonly maxExpectedUsdtUnits: string | undefined;
  private readonly inbox: PaymentInbox;
  private readonly attention: Attention;
  /** The refund desk opens refund cases while the payout runs, and stops once it has ended. */
  private refundDesk: Promise<void> = Promise.resolve();
  private ended = false;
  /** A cancel is being decided with the provider: the expiry waits for it. */
  private cancelling = false;
  /** The wait for the payment is over (paid, or expired and being reconciled): no cancel can win any more. */
  private expiryReached = false;
  /** When the charge stops being payable, on workflow time (from the provider's expires_at). */
  private expiryWaitMs: number;
  /** An operator's decision, accepted by the update handler, for the step that waits to act on it. */
  private decision: OperatorDecisionInput | undefined;
  /** The step that is running can be decided by an operator (it waits on an unknown). */
  private decidable: 'fail' | 'fail_or_complete' | undefined;
  /** A decision is being taken (its transfer checked): a second one is refused meanwhile. */
  private deciding = false;
  /** Why the decision being taken did not apply (proof arrived first). */
  private decisionRefusal: string | undefined;

  constructor(input: PayoutWorkflowInput) {
    this.settings = input.settings;
    this.maxExpectedUsdtUnits = input.maxExpectedUsdtUnits;
    this.expiryWaitMs = input.settings.chargeExpirySeconds * 1000;
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
    this.inbox = new PaymentInbox(() => this.record, input.settings.settlementMode);
    this.attention = new Attention(input.payoutId);
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
    setHandler(providerEventSignal, (event) => this.inbox.take(event));
    setHandler(cancelPayoutUpdate, () => this.cancel(), {
      validator: () => this.refuseCancelUnlessPending(),
    });
    setHandler(resolvePayoutUpdate, (d) => this.acceptDecision(d), {
      validator: (d) => this.refuseDecisionUnlessWaiting(d),
    });
    this.refundDesk = this.runRefundDesk();
    await this.save(this.record);
  }

  /** The PIX charge the payer pays; false when the provider could not create it (FAILED). */
  async createCharge(): Promise<boolean> {
    let charge: Awaited<ReturnType<typeof localCharging.createPixCharge>>;
    try {
      charge = await localCharging.createPixCharge({
        payoutId: this.record.id,
        amountCentavos: this.record.amountCentavos,
        pixKey: this.record.pixKey,
        pixKeyType: this.record.pixKeyType,
        expiresInSeconds: this.settings.chargeExpirySeconds,
      });
    } catch (err) {
      if (!isActivityError(err)) throw err;
      await this.fail('charge_creation_failed');
      return false;
    }
    this.followProviderExpiry(charge.expiresAt);
    await this.save(
      amend(this.record, now(), { pixCopyPaste: charge.pixCopyPaste, providerChargeId: charge.chargeId }),
    );
    // A payment signalled before the charge was recorded is judged now that its id is known.
    this.inbox.releaseHeld();
    return true;
  }

  /**
   * Waits for the charge's payment until it expires, then removes the charge and reads its status. True
   * once the payout is PROCESSING; false when it ended (unpaid, cancelled, or by an operator).
   */
  async awaitPayment(): Promise<boolean> {
    // The state, not the condition's result, decides: a payment applied in the same activation as
    // the expiry timer fired was received in time and must be settled, not dropped.
    await condition(
      () => this.inbox.payment !== undefined || isTerminal(this.record.status),
      this.expiryWaitMs,
    );
    // A cancel under way is decided before the expiry is: it may fail the payout or find its payment.
    this.expiryReached = true;
    await condition(() => !this.cancelling);
    if (isTerminal(this.record.status)) return false;
    if (this.inbox.payment === undefined) {
      const decided = await this.untilOperatorDecides('fail', () => this.reconcileAtExpiry());
      if (decided !== undefined) {
        await this.applyDecision(decided);
        return false;
      }
    }
    if (this.inbox.payment === undefined) {
      await this.fail('charge_expired');
      return false;
    }
    const { paidAt, eventId } = this.inbox.payment;
    await this.save(transition(this.record, 'PROCESSING', now(), { paidAt, paymentEventId: eventId }));
    return true;
  }

  /** PROCESSING to COMPLETED or FAILED, in the settlement mode fixed at start. */
  async settle(): Promise<void> {
    const { record, settings, inbox, attention } = this;
    const outcome = await attention.whenLate(
      settings.settlementTimeoutSeconds * 1000,
      () => this.alertOverdue(),
      () =>
        this.untilOperatorDecides('fail_or_complete', () =>
          settings.settlementMode === 'provider'
            ? settleThroughProvider(record, settings, inbox, attention)
            : settleFromTreasury(record, settings, attention),
        ),
    );
    if ('decision' in outcome) return this.applyDecision(outcome);
    await this.conclude(outcome);
  }

  /**
   * After COMPLETED or FAILED: the refund cases still due and the alerts for settlements reported
   * too late. Events may keep arriving while these activities run; the loop takes them too.
   */
  async closeTheBooks(): Promise<void> {
    this.ended = true;
    await this.refundDesk;
    while (this.inbox.refundsDue.length > 0 || this.inbox.lateSettlements.length > 0) {
      await this.openDueRefunds();
      await this.alertLateSettlements();
    }
  }

  // --- Expiry and cancel: one decision per payout between its payment, its expiry and the partner. ---

  /**
   * The expiry as the provider counts it: its `expires_at`, on workflow time. A value that disagrees
   * with what was asked for by more than the asked expiry itself (clock skew, a provider that ignores
   * the setting) is logged and the asked expiry is kept; reconciliation reads the provider's own
   * expiry and payment times either way.
   */
  private followProviderExpiry(expiresAt: string | undefined): void {
    const untilExpiry = Date.parse(expiresAt ?? '') - Date.now();
    const asked = this.settings.chargeExpirySeconds * 1000;
    if (Number.isFinite(untilExpiry) && untilExpiry > 0 && untilExpiry <= 2 * asked) {
      this.expiryWaitMs = untilExpiry;
    } else {
      log.warn('provider expiry disagrees with the one asked for; keeping the asked one', {
        payoutId: this.record.id,
        expiresAt,
      });
    }
  }

  /**
   * Webhooks are at least once but can be lost, and a bank knows nothing of an expiry: at expiry the
   * charge is removed at the provider (a later payer is refused by the bank), then its status is read.
   * A payment made by the expiry (both times on the provider's clock) is settled as if notified in
   * time; any later one is refunded. A status that cannot be read is never taken as unpaid: the
   * read is retried until it answers, with an attention item raised meanwhile.
   */
  private async reconcileAtExpiry(): Promise<void> {
    const { id: payoutId, providerChargeId: chargeId } = this.record;
    await this.inbox.whileHeld(async () => {
      try {
        await this.attention.whileUnanswered(
          'charge_removal_unanswered',
          `charge ${chargeId} could not be removed at expiry`,
          ATTENTION_AFTER_MS,
          () => reconciling.cancelPixCharge({ payoutId, chargeId: chargeId! }),
        );
      } catch (err) {
        if (!isActivityError(err) || !isRefusal(err)) throw err;
        // Removal is a courtesy to late payers; its refusal says nothing about payment.
        log.warn('charge removal at expiry refused; reading its status', { payoutId });
      }
      const status = await this.attention.whileUnanswered(
        'charge_status_unreadable',
        `status of charge ${chargeId} unreadable at expiry: the payout stays PENDING until it is read`,
        ATTENTION_AFTER_MS,
        () => reconciling.fetchChargeStatus({ payoutId, chargeId: chargeId! }),
      );
      this.inbox.closeAt(status.expiresAt);
      this.inbox.takeReported(status.payments);
    });
    if (this.inbox.payment !== undefined) {
      log.info('payment found by reconciliation at expiry', {
        payoutId,
        eventId: this.inbox.payment.eventId,
      });
    }
  }

  /**
   * The partner's cancel, decided once against the payment. Payments are held while the provider
   * removes the charge: `removed` means none of its amount reached it first, so the payout fails
   * `cancelled` and any payment still in flight is refunded; `already_paid` means the payment wins, it
   * is fetched from the charge's status (its webhook may be late or lost) and the cancel is refused.
   */
  private async cancel(): Promise<PayoutRecord> {
    // A second cancel while one is being decided waits for that decision, then is judged on it.
    await condition(() => !this.cancelling);
    this.refuseCancelUnlessPending();
    // The charge exists before POST answers, so a cancel from the partner finds it; wait in case.
    await condition(() => this.record.providerChargeId !== undefined || isTerminal(this.record.status));
    this.refuseCancelUnlessPending();
    this.cancelling = true;
    try {
      const { id: payoutId, providerChargeId: chargeId } = this.record;
      const removed = await this.inbox.whileHeld(async () => {
        // A provider that does not answer in time fails the update (the partner gets 503 and may try
        // again); the payout goes on as if no cancel had come.
        const outcome = await cancelling.cancelPixCharge({ payoutId, chargeId: chargeId! });
        if (outcome.kind === 'removed') {
          await this.fail('cancelled');
          return true;
        }
        const status = await cancelling.fetchChargeStatus({ payoutId, chargeId: chargeId! });
        this.inbox.takeReported(status.payments);
        return false;
      });
      if (removed) return this.record;
      throw notCancellable('payout is already being processed');
    } finally {
      this.cancelling = false;
    }
  }

  /** Throws the partner's 409 unless a cancel can still win: PENDING and no payment applied. */
  private refuseCancelUnlessPending(): void {
    if (isTerminal(this.record.status)) throw notCancellable(`payout is already ${this.record.status}`);
    // Past the expiry (and no cancel under way) reconciliation decides: paid in time, or expired.
    const expiring = this.expiryReached && !this.cancelling;
    if (this.record.status !== 'PENDING' || this.inbox.payment !== undefined || expiring) {
      throw notCancellable('payout is already being processed');
    }
  }

  // --- Operators: a decision where the payout waits on an unknown. ---

  /**
   * Runs `step` until it ends or an operator's decision is accepted. The decision then cancels the
   * step, but proof wins: a step that still ends with its outcome (a running attempt is waited for,
   * WAIT_CANCELLATION_COMPLETED in activity-options.ts) keeps it, and the decision is refused.
   */
  private async untilOperatorDecides<T>(
    allowed: 'fail' | 'fail_or_complete',
    step: () => Promise<T>,
  ): Promise<T | { decision: OperatorDecisionInput }> {
    this.decidable = allowed;
    const scope = new CancellationScope();
    const running = scope.run(step);
    try {
      const first = await Promise.race([
        running.then((value) => ({ value })),
        condition(() => this.decision !== undefined).then(() => undefined),
      ]);
      if (first === undefined) {
        scope.cancel();
        const settled = await running.then(
          (value) => ({ value }),
          (err: unknown) => {
            if (!isCancellation(err)) throw err;
            return undefined;
          },
        );
        if (settled === undefined) return { decision: this.decision! };
        return this.proofWins(settled.value);
      }
      return this.decision === undefined ? first.value : this.proofWins(first.value);
    } finally {
      this.decidable = undefined;
    }
  }

  /** The step found its answer while an operator's decision was being taken: the decision is refused. */
  private proofWins<T>(value: T): T {
    this.decisionRefusal = 'proof arrived while the decision was taken; the payout follows the proof';
    this.decision = undefined;
    return value;
  }

  private refuseDecisionUnlessWaiting(d: OperatorDecisionInput): void {
    const refuse = (message: string) => {
      throw notResolvable(message);
    };
    if (!d.decidedBy?.trim() || !d.reason?.trim()) refuse('a decision needs who decided and why');
    if (isTerminal(this.record.status)) refuse(`payout is already ${this.record.status}`);
    if (this.decision !== undefined || this.deciding) refuse('payout already has a decision being taken');
    if (this.decidable === undefined || !this.attention.waiting) {
      refuse('payout is not waiting on an unknown: nothing to decide (see admin payouts attention)');
    }
    if (this.settings.settlementMode === 'treasury' && this.decidable === 'fail_or_complete') {
      // Our own transaction may be signed and in a pool: only the chain can end it (D25).
      refuse('a treasury transfer may be signed: only its proof ends the payout (see the runbook)');
    }
    if (d.decision === 'complete') {
      if (this.decidable !== 'fail_or_complete') refuse('payout was never paid: it can only be failed');
      if (!d.txHash || !/^0x[0-9a-fA-F]{64}$/.test(d.txHash)) refuse('complete needs the transfer hash');
      if (!d.amountUsdtUnits || !/^[1-9][0-9]*$/.test(d.amountUsdtUnits)) refuse('complete needs the amount');
    } else if (d.decision !== 'fail') {
      refuse('decision is fail or complete');
    }
  }

  /**
   * A `complete` decision names a transfer, which is proven on chain and claimed for this payout
   * before the decision is taken: an operator cannot complete a payout with USDT that did not land.
   */
  private async acceptDecision(d: OperatorDecisionInput): Promise<PayoutRecord> {
    // Taken synchronously, before any await: a second decision sent meanwhile is refused.
    this.deciding = true;
    try {
      if (d.decision === 'complete') {
        const verdict = await verifying
          .verifyUsdtTransfer({
            payoutId: this.record.id,
            txHash: d.txHash!,
            to: this.record.receiverWallet,
            amountUnits: d.amountUsdtUnits!,
            minConfirmations: this.settings.settlementConfirmations,
          })
          .catch(() => 'unproven' as const);
        if (verdict !== 'confirmed') {
          throw notResolvable(
            `transfer ${d.txHash} is not a confirmed, unclaimed payment of that amount to the receiver (${verdict})`,
          );
        }
      }
      // The step may have found its proof while the transfer was checked: then proof wins.
      if (isTerminal(this.record.status) || this.decidable === undefined) {
        throw notResolvable(`payout is already ${this.record.status}`);
      }
      this.decisionRefusal = undefined;
      this.decision = d;
      await condition(() => isTerminal(this.record.status) || this.decisionRefusal !== undefined);
      if (this.decisionRefusal !== undefined) throw notResolvable(this.decisionRefusal);
      return this.record;
    } finally {
      this.deciding = false;
    }
  }

  private async applyDecision({ decision: d }: { decision: OperatorDecisionInput }): Promise<void> {
    await bookkeeping.recordOperatorDecision({ payoutId: this.record.id, ...d });
    log.warn('operator decided the payout', {
      payoutId: this.record.id,
      decision: d.decision,
      by: d.decidedBy,
    });
    if (d.decision === 'fail') return this.fail('operator_decision');
    await this.conclude({
      kind: 'completed',
      txHash: d.txHash!,
      amountUnits: d.amountUsdtUnits!,
      confirmedAt: now(),
    });
  }

  // --- Ends ---

  private async conclude(outcome: SettlementOutcome): Promise<void> {
    if (outcome.kind === 'failed') return this.fail(outcome.reason);
    const { txHash, amountUnits, confirmedAt } = outcome;
    await this.save(
      transition(this.record, 'COMPLETED', now(), {
        blockchainTxId: txHash,
        settledAmountUsdtUnits: amountUnits,
        confirmedAt,
      }),
    );
    const { id: payoutId, partnerId, minAmountUsdtUnits } = this.record;
    if (BigInt(amountUnits) < BigInt(minAmountUsdtUnits)) {
      await bookkeeping.alertSettlementBelowMinimum({
        payoutId,
        partnerId,
        minAmountUsdtUnits,
        settledAmountUsdtUnits: amountUnits,
      });
    }
    if (this.maxExpectedUsdtUnits !== undefined && BigInt(amountUnits) > BigInt(this.maxExpectedUsdtUnits)) {
      await this.attention.raise(
        'settled_above_quote',
        `settled ${amountUnits} USDT units, more than the payment buys at the quote (${this.maxExpectedUsdtUnits})`,
      );
    }
  }

  private async fail(reason: FailureReason): Promise<void> {
    log.warn('payout failed', { payoutId: this.record.id, reason });
    await this.save(transition(this.record, 'FAILED', now(), { failureReason: reason }));
  }

  private async alertOverdue(): Promise<void> {
    await bookkeeping.alertSettlementOverdue({
      payoutId: this.record.id,
      partnerId: this.record.partnerId,
      mode: this.settings.settlementMode,
      overdueSeconds: this.settings.settlementTimeoutSeconds,
    });
    await this.attention.raise(
      'settlement_overdue',
      `no proof of the settlement ${this.settings.settlementTimeoutSeconds} s after payment; still verifying`,
    );
  }

  // --- Refunds and alerts ---

  /** Opens the refund cases due while the payout runs; returns once it has ended and none is left. */
  private async runRefundDesk(): Promise<void> {
    for (;;) {
      await condition(() => this.inbox.refundsDue.length > 0 || this.ended);
      if (this.inbox.refundsDue.length === 0) return;
      await this.openDueRefunds();
    }
  }

  private async openDueRefunds(): Promise<void> {
    const due = this.inbox.refundsDue;
    for (let next = due.shift(); next !== undefined; next = due.shift()) {
      const { event, kind, reason } = next;
      await bookkeeping.recordLatePayment({ payoutId: this.record.id, event, reason, kind });
    }
  }

  private async alertLateSettlements(): Promise<void> {
    const late = this.inbox.lateSettlements;
    for (let event = late.shift(); event !== undefined; event = late.shift()) {
      if (event.type === 'settlement.completed' && event.txHash === this.record.blockchainTxId) {
        // The report of the very transfer that completed the payout, read after its status proved it.
        continue;
      }
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

  private async save(next: PayoutRecord): Promise<void> {
    const ended = isTerminal(next.status) && !isTerminal(this.record.status);
    this.record = next;
    upsertPayoutSearchAttributes(this.record);
    const { workflowId, runId } = workflowInfo();
    const interim = !isTerminal(next.status);
    const writer = interim ? localWrite : bookkeeping;
    await writer.recordPayout(this.record, workflowId, runId);
    if (!ended) return;
    // Ended: whatever was received and not settled is refunded, whatever was waited on is answered.
    this.inbox.settleAccounts(this.record.failureReason ?? this.record.status);
    this.attention.forgetWaiting();
    // A payout whose charge could not be created was answered 502: the partner never saw its id, so
    // it gets no callback either.
    if (this.record.failureReason === 'charge_creation_failed') return;
    // Partner callback, started once the read model agrees, so a partner who GETs on receipt sees it.
    await startPartnerCallback(this.record);
  }
}

function notResolvable(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: PAYOUT_NOT_RESOLVABLE, message, nonRetryable: true });
}

function notCancellable(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: PAYOUT_NOT_CANCELLABLE, message, nonRetryable: true });
}

/** Workflow time: deterministic on replay. */
function now(): string {
  return new Date().toISOString();
}
