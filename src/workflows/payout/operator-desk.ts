import {
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import type { ChainActivities } from '../../activities';
import { isTerminal, type PayoutRecord } from '../../domain/payout';
import { BOOKKEEPING, PROOF_ROUND } from '../activity-options';
import {
  PAYOUT_NOT_RESOLVABLE,
  resolvePayoutUpdate,
  type OperatorDecisionInput,
  type PayoutSettings,
} from '../payout.contract';
import type { Attention } from './attention';
import { closeTreasuryRounds } from './settlement-steps';

const verifying = proxyActivities<Pick<ChainActivities, 'verifyUsdtTransfer'>>(PROOF_ROUND);
const treasuryBook = proxyActivities<Pick<ChainActivities, 'hasOpenTreasuryTransfer'>>(BOOKKEEPING);

/**
 * What an operator may decide about the step that is waiting: a payout never paid can only fail; a
 * flagged receiver is refunded or released.
 */
export type Decidable = 'fail' | 'fail_or_complete' | 'refund_or_release' | 'refund';

/** An accepted decision, handed to the payout in place of the step's own outcome. */
export interface Decided {
  decision: OperatorDecisionInput;
}

/**
 * Where an operator decides a payout that waits on an unknown (`admin payouts resolve`): one decision
 * at a time, only for a step that waits with an attention item open, and proof always wins over it.
 */
export class OperatorDesk {
  /** The decision accepted by the update handler, for the waiting step to act on. */
  private decision: OperatorDecisionInput | undefined;
  /**
   * The steps that can be decided, outermost first: a step may run one inside it (the treasury's send
   * waits on a flagged receiver inside the settlement). A decision is for the innermost.
   */
  private readonly waits: {
    kind: Decidable;
    id: number;
    veto: ((d: OperatorDecisionInput) => string | undefined) | undefined;
  }[] = [];
  private waitsOpened = 0;
  /** A decision is being taken (its transfer checked): a second one is refused meanwhile. */
  private deciding = false;
  private opened = false;
  private closed = false;
  /** Why the decision being taken did not apply (proof arrived first). */
  private refusal: string | undefined;
  /** The last decision handed to the payout. */
  private taken: OperatorDecisionInput | undefined;
  /** How many fail or refund decisions were refused because a treasury transfer is signed. */
  private refusedAsSigned = 0;

  constructor(
    private readonly payout: () => PayoutRecord,
    private readonly settings: PayoutSettings,
    private readonly attention: Attention,
  ) {}

  /** Takes `resolvePayout` updates from now on. */
  open(): void {
    if (this.opened) return;
    this.opened = true;
    setHandler(resolvePayoutUpdate, (d) => this.accept(d), {
      validator: (d) => this.refuseUnlessWaiting(d),
    });
  }

  /** The run hands the payout over to a new one: decisions are refused, to be sent again there. */
  close(): void {
    this.closed = true;
  }

  /**
   * Runs `step` until it ends or an operator's decision is accepted. The decision then cancels the
   * step, but proof wins: a step that still ends with its outcome (a running attempt is waited for,
   * WAIT_CANCELLATION_COMPLETED in activity-options.ts) keeps it, and the decision is refused. So does
   * `veto`, asked once the step has stopped (what it learned meanwhile counts): the decision is
   * refused with its reason and the step runs again, resuming from what it keeps outside itself.
   */
  async untilDecided<T>(
    allowed: Decidable,
    step: () => Promise<T>,
    veto?: (d: OperatorDecisionInput) => string | undefined,
  ): Promise<T | Decided> {
    const depth = this.waits.push({ kind: allowed, id: ++this.waitsOpened, veto });
    try {
      for (;;) {
        const scope = new CancellationScope();
        const running = scope.run(step);
        const first = await Promise.race([
          running.then((value) => ({ value })),
          condition(() => this.decision !== undefined && this.waits.length === depth).then(() => undefined),
        ]);
        if (first !== undefined)
          return this.decision === undefined ? first.value : this.proofWins(first.value);
        scope.cancel();
        const settled = await running.then(
          (value) => ({ value }),
          (err: unknown) => {
            if (!isCancellation(err)) throw err;
            return undefined;
          },
        );
        if (settled !== undefined) return this.proofWins(settled.value);
        const why = veto?.(this.decision!) ?? (await this.treasuryMayStillSend(this.decision!, 'taking it'));
        if (why === undefined) return this.take();
        this.refusal = why;
        this.decision = undefined;
      }
    } finally {
      this.waits.pop();
    }
  }

  /**
   * A flagged receiver waits for an operator: refund or release. Or 'signed', once a refund was
   * refused because a treasury transfer is signed for the payout (an attempt that outlived its lease
   * signed it after the flag was read): no decision can end that wait then, only the transfer's proof.
   */
  async decideFlagged(): Promise<Decided | 'signed'> {
    const refusedBefore = this.refusedAsSigned;
    return this.untilDecided('refund_or_release', async () => {
      await condition(() => this.refusedAsSigned > refusedBefore);
      return 'signed' as const;
    });
  }

  /** What the innermost waiting step can be decided into; undefined when none waits. */
  private get decidable(): Decidable | undefined {
    return this.waits.at(-1)?.kind;
  }

  /** Hands the accepted decision to the payout, and frees the desk for a later one. */
  private take(): Decided {
    const decision = this.decision!;
    this.taken = decision;
    this.decision = undefined;
    return { decision };
  }

  /** The step found its answer while an operator's decision was being taken: the decision is refused. */
  private proofWins<T>(value: T): T {
    this.refusal = 'proof arrived while the decision was taken; the payout follows the proof';
    this.decision = undefined;
    return value;
  }

  private refuseUnlessWaiting(d: OperatorDecisionInput): void {
    const refuse = (message: string) => {
      throw notResolvable(message);
    };
    if (!d.decidedBy?.trim() || !d.reason?.trim()) refuse('a decision needs who decided and why');
    if (this.closed) {
      refuse('the payout is moving to a new run (its long wait continues as new): send the decision again');
    }
    const { status } = this.payout();
    if (isTerminal(status)) refuse(`payout is already ${status}`);
    if (this.decision !== undefined || this.deciding) refuse('payout already has a decision being taken');
    if (this.decidable === undefined || !this.attention.waiting) {
      refuse('payout is not waiting on an unknown: nothing to decide (see admin payouts attention)');
    }
    const vetoed = this.waits.at(-1)?.veto?.(d);
    if (vetoed !== undefined) refuse(vetoed);
    if (
      this.settings.settlementMode === 'treasury' &&
      this.decidable === 'fail_or_complete' &&
      d.decision === 'complete'
    ) {
      // Our own transaction may be signed and in a pool: another transfer would pay the receiver twice.
      refuse('a treasury transfer may be signed: only its proof completes the payout (see the runbook)');
    }
    const onScreening = d.decision === 'refund' || d.decision === 'release';
    if (this.decidable === 'refund_or_release') {
      if (!onScreening) refuse('payout waits on a flagged receiver: decide refund or release');
    } else if (this.decidable === 'refund') {
      // Screening could not be read: nothing was sent, so the payer may be refunded; never released.
      if (d.decision !== 'refund')
        refuse('payout waits on screening it cannot read: it can only be refunded');
    } else if (onScreening) {
      refuse(
        this.decidable === 'fail'
          ? 'payout waits on an unknown and was never paid: it can only be failed'
          : 'payout waits on an unknown, not on a flagged receiver: decide fail or complete',
      );
    } else if (d.decision === 'complete') {
      if (this.decidable !== 'fail_or_complete') refuse('payout was never paid: it can only be failed');
      if (!d.txHash || !/^0x[0-9a-fA-F]{64}$/.test(d.txHash)) refuse('complete needs the transfer hash');
      if (!d.amountUsdtUnits || !/^[1-9][0-9]*$/.test(d.amountUsdtUnits)) refuse('complete needs the amount');
    } else if (d.decision !== 'fail') {
      refuse('decision is fail, complete, refund or release');
    }
  }

  /**
   * A `complete` decision names a transfer, which is proven on chain and claimed for this payout
   * before the decision is taken: an operator cannot complete a payout with USDT that did not land.
   * Answers once the payout has ended on the decision, or refuses if proof came first.
   */
  private async accept(d: OperatorDecisionInput): Promise<PayoutRecord> {
    // Taken synchronously, before any await: a second decision sent meanwhile is refused.
    this.deciding = true;
    // The wait the validator checked the decision against: only that one may take it.
    const checkedAgainst = this.waits.at(-1)?.id;
    try {
      if (d.decision === 'complete') await this.proveNamedTransfer(d);
      const signed = await this.treasuryMayStillSend(d);
      if (signed !== undefined) throw notResolvable(signed);
      if (this.waits.at(-1)?.id !== checkedAgainst && !isTerminal(this.payout().status)) {
        // The step answered while the decision was checked and the payout moved on (a send began).
        throw notResolvable(
          'the payout moved on while the decision was checked: see admin payouts attention',
        );
      }
      // The step may have found its proof while the transfer was checked: then proof wins.
      if (isTerminal(this.payout().status) || this.decidable === undefined) {
        throw notResolvable(`payout is already ${this.payout().status}`);
      }
      this.refusal = undefined;
      this.decision = d;
      // A release does not end the payout: it is answered once the waiting step has taken it.
      await condition(
        () =>
          isTerminal(this.payout().status) ||
          this.refusal !== undefined ||
          (d.decision === 'release' && this.taken === d),
      );
      if (this.refusal !== undefined) throw notResolvable(this.refusal);
      return this.payout();
    } finally {
      this.deciding = false;
    }
  }

  /**
   * A fail or a refund says no USDT will move. A treasury transfer signed for the payout (by this run,
   * or an earlier one before an operator's reset) may still land: then only its proof ends the payout.
   * Asked when the decision arrives, and again once the step it cancels has stopped (it may have
   * signed meanwhile); nothing signed, the payout waiting on a treasury that cannot send may be failed.
   */
  private async treasuryMayStillSend(
    d: OperatorDecisionInput,
    /** The decision is taken right after (the last ask): the treasury's rounds are then closed for good. */
    taking?: 'taking it',
  ): Promise<string | undefined> {
    if (this.settings.settlementMode !== 'treasury') return undefined;
    if (d.decision !== 'fail' && d.decision !== 'refund') return undefined;
    const payoutId = this.payout().id;
    const closed = taking !== undefined ? await closeTreasuryRounds(payoutId) : undefined;
    const signed =
      closed !== undefined ? closed === 'signed' : await treasuryBook.hasOpenTreasuryTransfer({ payoutId });
    if (signed && patched('flagged-wait-ends-on-signed')) this.refusedAsSigned++;
    return signed
      ? `a treasury transfer is signed for this payout and may still land: no ${d.decision}`
      : undefined;
  }

  private async proveNamedTransfer(d: OperatorDecisionInput): Promise<void> {
    const payout = this.payout();
    const verdict = await verifying
      .verifyUsdtTransfer({
        payoutId: payout.id,
        txHash: d.txHash!,
        to: payout.receiverWallet,
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
}

export function isDecided<T extends object>(outcome: T | Decided): outcome is Decided {
  return 'decision' in outcome;
}

function notResolvable(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: PAYOUT_NOT_RESOLVABLE, message, nonRetryable: true });
}
