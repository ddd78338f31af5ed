import {
  allHandlersFinished,
  condition,
  continueAsNew,
  log,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { PayoutBookkeepingActivities, ProviderActivities } from '../activities';
import { amend, isTerminal, transition, type FailureReason, type PayoutRecord } from '../domain/payout';
import { isActivityError } from './activity-errors';
import { asLocal, BOOKKEEPING, CHARGE_CREATION } from './activity-options';
import { startPartnerCallback } from './callback.workflow';
import {
  awaitChargeUpdate,
  getPayoutQuery,
  openingRecord,
  providerEventSignal,
  type PayoutSettings,
  type PayoutWorkflowInput,
  type PixCharge,
} from './payout.contract';
import { Attention } from './payout/attention';
import { ChargeWindow } from './payout/charge-window';
import { isDecided, OperatorDesk, type Decided } from './payout/operator-desk';
import { PaymentInbox } from './payout/payment-inbox';
import type { PayoutHandOver } from './payout/handed-over';
import { ProviderSettlementBook, settleThroughProvider } from './payout/provider-settlement';
import { RefundsAndLateReports } from './payout/refunds-and-late-reports';
import { decideFlaggedReceiver, screenBeforeSending } from './payout/screening-step';
import type { ScreeningVerdict } from '../domain/screening';
import { type SettlementOutcome } from './payout/settlement-steps';
import { beginTreasurySettlement, settleFromTreasury, type TreasuryBook } from './payout/treasury-settlement';
import { HandOver, timeToHandOver } from './hand-over';
import { upsertPayoutSearchAttributes } from './search-attributes';

const bookkeeping =
  proxyActivities<
    Pick<
      PayoutBookkeepingActivities,
      'recordPayout' | 'alertSettlementOverdue' | 'alertSettlementBelowMinimum' | 'recordOperatorDecision'
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
  try {
    // A run handed over by one that waited long (src/workflows/hand-over.ts) goes on settling.
    if (payout.handedOver || ((await payout.createCharge()) && (await payout.awaitPayment()))) {
      await payout.settle();
    }
  } catch (err) {
    if (err instanceof HandOver) return payout.continueAsNew();
    throw err;
  }
  // Every path ends here with the payout COMPLETED or FAILED, saved.
  await payout.refundWhatWasNotSettled();
  return payout.record;
}

/**
 * The payout's state and its steps, in the order they run. Its parts: the inbox classifies the
 * provider's events, the charge window decides payment against expiry and cancel, settlement runs by
 * mode, the attention list tracks what is overdue, the operator desk takes decisions on unknowns.
 */
class PayoutProcess {
  /** The payout as it stands: what queries answer and the read model holds. */
  record: PayoutRecord;
  private readonly settings: PayoutSettings;
  private readonly maxExpectedUsdtUnits: string | undefined;
  /** The charge the api created before the start (D81); undefined, this workflow creates it. */
  private readonly charge: PixCharge | undefined;
  private readonly inbox: PaymentInbox;
  private readonly attention: Attention;
  private readonly desk: OperatorDesk;
  private readonly window: ChargeWindow;
  private readonly refunds: RefundsAndLateReports;
  /** What is known of the provider settlement: kept across an operator's decision that it refuses. */
  private readonly providerSettlement = new ProviderSettlementBook();
  /** Where the treasury settlement stands, once it has begun. */
  private treasury: TreasuryBook | undefined;
  /** An operator released the receiver after a flag: the USDT is sent without screening it again. */
  private released = false;
  /** When the settlement began (workflow time). */
  private settlingSince: number | undefined;
  private overdueAlerted = false;
  /** Set when an earlier run of this payout handed it over: this run settles from there. */
  readonly handedOver: PayoutHandOver | undefined;

  constructor(private readonly input: PayoutWorkflowInput) {
    this.settings = input.settings;
    this.maxExpectedUsdtUnits = input.maxExpectedUsdtUnits;
    const handedOver = (this.handedOver = input.handOver);
    this.record = handedOver?.record ?? openingRecord(input);
    this.charge = input.charge;
    const payout = () => this.record;
    this.inbox = new PaymentInbox(payout, input.settings.settlementMode, handedOver?.inbox);
    this.attention = new Attention(input.payoutId, handedOver?.attention);
    if (handedOver !== undefined) {
      this.settlingSince = handedOver.settlingSince;
      this.overdueAlerted = handedOver.overdueAlerted;
      const { settlement } = handedOver;
      if (settlement.mode === 'treasury') this.treasury = { ...settlement.book, handedOver: true };
      else {
        this.providerSettlement.knowledge = settlement.knowledge;
        this.released = settlement.released;
      }
    }
    this.desk = new OperatorDesk(payout, this.settings, this.attention);
    this.window = new ChargeWindow(payout, this.settings, this.inbox, this.attention, this.desk, (reason) =>
      this.fail(reason),
    );
    this.refunds = new RefundsAndLateReports(payout, this.inbox);
  }

  /** Answers queries and takes provider events from now on, starts opening refund cases, saves PENDING. */
  async open(): Promise<void> {
    setHandler(getPayoutQuery, () => this.record);
    setHandler(awaitChargeUpdate, async () => {
      await condition(() => this.record.pixCopyPaste !== '' || isTerminal(this.record.status));
      return this.record;
    });
    // Synchronous on purpose: the SDK runs signal handlers before the main code resumes in the same
    // activation, so an event that arrives together with the last activity result is still seen
    // before the workflow returns, and is refunded or alerted rather than lost.
    // A charge the api created (D81) may have expired before this first task: a payment after its
    // expiry (the provider's clock) is late from the first one judged, as reconciliation would judge it.
    if (this.charge && !this.handedOver) this.inbox.closeAt(this.charge.expiresAt);
    setHandler(providerEventSignal, (event) => this.inbox.take(event));
    this.window.open();
    // A handed-over run takes decisions once its settlement waits again (settle): one sent during the
    // hand-over reaches this run's first task, where the wait would not yet exist.
    if (!this.handedOver) this.desk.open();
    this.refunds.start();
    // Handed over: the read model holds the payout as it stands; the new run's search attributes are set.
    if (this.handedOver) upsertPayoutSearchAttributes(this.record);
    else await this.save(this.record);
  }

  /** The PIX charge the payer pays; false when the provider could not create it (FAILED). */
  async createCharge(): Promise<boolean> {
    // Created by the api before the start (D81): the opening record, saved by open(), holds it.
    if (this.charge) {
      this.window.followExpiryOfChargeMadeBeforeStart(this.charge.expiresAt);
      this.inbox.releaseHeld();
      return true;
    }
    let charge: PixCharge;
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
    this.window.followProviderExpiry(charge.expiresAt);
    await this.save(
      amend(this.record, now(), { pixCopyPaste: charge.pixCopyPaste, providerChargeId: charge.chargeId }),
    );
    // A payment signalled before the charge was recorded is judged now that its id is known.
    this.inbox.releaseHeld();
    return true;
  }

  /** True once the payout is PROCESSING; false when it ended (unpaid, cancelled, or by an operator). */
  async awaitPayment(): Promise<boolean> {
    const outcome = await this.window.awaitPayment();
    if (outcome === 'ended') return false;
    if (outcome === 'unpaid') {
      await this.fail('charge_expired');
      return false;
    }
    if (outcome !== 'paid') {
      await this.applyDecision(outcome);
      return false;
    }
    const { paidAt, eventId } = this.inbox.payment!;
    await this.save(transition(this.record, 'PROCESSING', now(), { paidAt, paymentEventId: eventId }));
    return true;
  }

  /**
   * PROCESSING to COMPLETED or FAILED, in the settlement mode fixed at start, once the receiver has
   * been screened again: a wallet flagged since POST is paid only if an operator releases it.
   */
  async settle(): Promise<void> {
    if (!this.handedOver) {
      const providerMode = this.settings.settlementMode === 'provider';
      const screened = await screenBeforeSending(this.record, this.attention, this.desk, providerMode);
      // `signed`: a treasury transfer is signed for the payout (before a reset): the treasury confirms it.
      const decided = typeof screened === 'object' && 'decided' in screened ? screened : undefined;
      if (decided) {
        await this.recordDecision(decided.decided);
        if (decided.decided.decision.decision !== 'release') return this.fail(decided.refundReason);
      }
      this.released = decided !== undefined;
      // A request sent by a run a reset undid: the settlement follows it (its id, or a request again).
      if (typeof screened === 'object' && 'kind' in screened && screened.kind === 'requested_before') {
        this.providerSettlement.followEarlierRequest(
          this.settings.chainId,
          Date.now(),
          screened.settlementId,
        );
      }
      this.settlingSince = Date.now();
      if (this.settings.settlementMode === 'treasury') {
        this.treasury = beginTreasurySettlement(this.released);
        if (typeof screened === 'object' && 'signed' in screened) this.treasury.flag = screened.signed;
      }
    }
    const { record, settings, inbox, attention, providerSettlement, released } = this;
    const mayHandOver = () => this.mayHandOver();
    const settling = () => {
      const running = settlingInMode();
      this.desk.open();
      return running;
    };
    const settlingInMode = () =>
      settings.settlementMode === 'provider'
        ? this.desk.untilDecided(
            'fail_or_complete',
            () =>
              settleThroughProvider(
                record,
                settings,
                inbox,
                attention,
                providerSettlement,
                released,
                mayHandOver,
              ),
            (d) => (d.decision === 'fail' ? providerSettlement.vetoFail() : undefined),
          )
        : this.desk.untilDecided('fail_or_complete', () =>
            settleFromTreasury(
              record,
              settings,
              attention,
              (flag) => this.decideFlagged(flag),
              this.treasury!,
              mayHandOver,
            ),
          );
    // Overdue counts from the settlement's start, in whichever run; alerted once. Its item, if the
    // run before handed over while raising it, is raised beside the settlement, which starts first.
    const raisingOverdue = (running: Promise<SettlementOutcome | Decided>) =>
      attention.has('settlement_overdue') ? running : waitingAlsoFor(running, this.raiseOverdue());
    const outcome = this.overdueAlerted
      ? await raisingOverdue(settling())
      : await attention.whenLate(
          this.settlingSince! + settings.settlementTimeoutSeconds * 1000 - Date.now(),
          () => this.alertOverdue(),
          settling,
        );
    if (isDecided(outcome)) return this.applyDecision(outcome);
    await this.conclude(outcome);
  }

  /** After COMPLETED or FAILED: refund cases for what was received and not settled, late reports alerted. */
  async refundWhatWasNotSettled(): Promise<void> {
    await this.refunds.finish();
  }

  /**
   * Between the looks of a long wait: once the history is long and no update handler is at work, the
   * step is ended (HandOver) so that the payout continues as new with what it knows
   * (src/workflows/hand-over.ts). Returns when it is not time.
   */
  private async mayHandOver(): Promise<void> {
    if (!timeToHandOver()) return;
    // From here this run raises, clears and decides nothing: the next run holds it all.
    this.attention.freeze();
    this.desk.close();
    throw new HandOver();
  }

  /**
   * Ends this run and starts the next with what it knows, once the step has unwound and no refund case
   * or handler is still at work. Taken in one go, after every wait: a provider event that arrived
   * meanwhile is in the inbox handed over.
   */
  async continueAsNew(): Promise<never> {
    await condition(() => this.refunds.idle && allHandlersFinished());
    const handOver: PayoutHandOver = {
      record: this.record,
      settlingSince: this.settlingSince!,
      overdueAlerted: this.overdueAlerted,
      inbox: this.inbox.handOver(),
      attention: this.attention.openKinds(),
      settlement:
        this.settings.settlementMode === 'treasury'
          ? { mode: 'treasury', book: { ...this.treasury! } }
          : { mode: 'provider', released: this.released, knowledge: this.providerSettlement.knowledge! },
    };
    log.info('long wait: the payout continues as new', {
      payoutId: this.record.id,
      historyLength: workflowInfo().historyLength,
    });
    return continueAsNew<typeof payoutWorkflow>({ ...this.input, handOver });
  }

  /** A receiver flagged right before the treasury signs: the operator's decision, recorded. */
  private async decideFlagged(
    flag: Extract<ScreeningVerdict, { kind: 'flagged' }>,
  ): Promise<'refund' | 'release' | 'signed'> {
    const decided = await decideFlaggedReceiver(this.record, this.attention, this.desk, flag);
    if (decided === 'signed') return 'signed';
    await this.recordDecision(decided);
    return decided.decision.decision === 'release' ? 'release' : 'refund';
  }

  /** An operator's decision on an unknown: the payout ends on it. */
  private async applyDecision(decided: Decided): Promise<void> {
    await this.recordDecision(decided);
    const d = decided.decision;
    if (d.decision !== 'complete') return this.fail('operator_decision');
    await this.conclude({
      kind: 'completed',
      txHash: d.txHash!,
      amountUnits: d.amountUsdtUnits!,
      confirmedAt: now(),
    });
  }

  private async recordDecision({ decision: d }: Decided): Promise<void> {
    await bookkeeping.recordOperatorDecision({ payoutId: this.record.id, ...d });
    log.warn('operator decided the payout', {
      payoutId: this.record.id,
      decision: d.decision,
      by: d.decidedBy,
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
    this.overdueAlerted = true;
    await this.raiseOverdue();
  }

  private async raiseOverdue(): Promise<void> {
    await this.attention.raise(
      'settlement_overdue',
      `no proof of the settlement ${this.settings.settlementTimeoutSeconds} s after payment; still verifying`,
    );
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

/** `running`'s outcome, once `beside` has ended too, however `running` ends (a hand-over included). */
async function waitingAlsoFor<T>(running: Promise<T>, beside: Promise<void>): Promise<T> {
  try {
    return await running;
  } finally {
    await beside;
  }
}

/** Workflow time: deterministic on replay. */
function now(): string {
  return new Date().toISOString();
}
