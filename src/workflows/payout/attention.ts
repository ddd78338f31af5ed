import { CancellationScope, proxyActivities, sleep } from '@temporalio/workflow';
import type { AttentionKind, PayoutBookkeepingActivities } from '../../activities';
import { REVIEW_KINDS } from '../../domain/attention';
import { BOOKKEEPING } from '../activity-options';

const alerts =
  proxyActivities<Pick<PayoutBookkeepingActivities, 'raiseAttention' | 'clearAttention'>>(BOOKKEEPING);

/**
 * The payout's open questions, as operators see them (`admin payouts attention`, the alert
 * PayoutOutcomeUnknown): raised when an answer is overdue, cleared when it arrives. A payout that
 * waits on an unknown always has one open, which is also what lets an operator decide it.
 */
export class Attention {
  private readonly open: Set<AttentionKind>;
  /** The run is handing over (continue-as-new): the next run holds the items, this one touches none. */
  private handingOver = false;

  constructor(
    private readonly payoutId: string,
    /** The items an earlier run of the payout left open (src/workflows/hand-over.ts). */
    handedOver: readonly AttentionKind[] = [],
  ) {
    this.open = new Set(handedOver);
  }

  /** The run is handing over: from now on it raises and clears nothing (the next run holds the items). */
  freeze(): void {
    this.handingOver = true;
  }

  /** The items open now, for the run the payout is handed over to. */
  openKinds(): AttentionKind[] {
    return [...this.open];
  }

  /** Whether `kind` is open. */
  has(kind: AttentionKind): boolean {
    return this.open.has(kind);
  }

  /** True while the payout waits on an unknown (items for review do not count). */
  get waiting(): boolean {
    return [...this.open].some((kind) => !REVIEW_KINDS.includes(kind));
  }

  async raise(kind: AttentionKind, detail: string): Promise<void> {
    if (this.handingOver || this.open.has(kind)) return;
    this.open.add(kind);
    // Raised even by a step an operator's decision is cancelling: it may be raising what it proved.
    await CancellationScope.nonCancellable(() =>
      alerts.raiseAttention({ payoutId: this.payoutId, kind, detail }),
    );
  }

  async clear(...kinds: AttentionKind[]): Promise<void> {
    if (this.handingOver) return;
    const open = kinds.filter((kind) => this.open.delete(kind));
    if (open.length === 0) return;
    // Runs even when the step that raised it was cancelled by an operator's decision.
    await CancellationScope.nonCancellable(() =>
      alerts.clearAttention({ payoutId: this.payoutId, kinds: open, by: 'workflow' }),
    );
  }

  /**
   * The payout has ended: what it waited on is answered (items for review stay for an operator). The
   * read model's terminal write clears them in the database, whichever run or attempt raised them.
   */
  forgetWaiting(): void {
    for (const kind of [...this.open]) if (!REVIEW_KINDS.includes(kind)) this.open.delete(kind);
  }

  /**
   * Runs `step`; if it is still running after `afterMs`, calls `onLate` once (and keeps waiting).
   * `step`'s result or failure is passed on as is.
   */
  async whenLate<T>(afterMs: number, onLate: () => Promise<void>, step: () => Promise<T>): Promise<T> {
    const timer = new CancellationScope();
    const alarm = timer
      .run(() => sleep(Math.max(1, afterMs)))
      .then(
        () => onLate(),
        () => undefined, // the step ended first
      );
    try {
      return await step();
    } finally {
      timer.cancel();
      await CancellationScope.nonCancellable(() => alarm);
    }
  }

  /** Runs `step`, raising `kind` if it has not answered after `afterMs` and clearing it once it has. */
  async whileUnanswered<T>(
    kind: AttentionKind,
    detail: string,
    afterMs: number,
    step: () => Promise<T>,
  ): Promise<T> {
    try {
      return await this.whenLate(afterMs, () => this.raise(kind, detail), step);
    } finally {
      await this.clear(kind);
    }
  }
}
