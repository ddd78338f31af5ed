/**
 * Bounded histories: a run that has waited long enough to hold HAND_OVER_AT_EVENTS events hands what
 * it knows to a new run of the same workflow (continue-as-new) at a point where nothing is in flight,
 * and the new run goes on from that knowledge, not from the start. Its workflow id stays, so queries,
 * updates, signals and the admin commands reach whichever run is current; a signal that arrives while
 * the run closes makes the server refuse the close and run the task again with it, so it is in the
 * knowledge handed over (docs/decisions.md D87).
 */
import { allHandlersFinished, patched, workflowInfo } from '@temporalio/workflow';

/**
 * Thrown by a step of a long wait when it is time to hand over: it unwinds every scope the step runs
 * in (their `finally` blocks included), and the workflow function, where nothing is left running,
 * takes what it knows and continues as new.
 */
export class HandOver extends Error {
  constructor() {
    super('the long wait continues in a new run');
    this.name = 'HandOver';
  }
}

/**
 * Past this many events a waiting run hands over: well before Temporal suggests it (4,096 events by
 * default: `continueAsNewSuggested`) and far from its warning at 10,240. No payout that does not wait
 * comes near it (a payout's whole history is about a hundred events).
 */
export const HAND_OVER_AT_EVENTS = 2_000;

/**
 * Whether this run paces its long waits and hands over: the patch behind both (docs/workflow-changes.md).
 * A run recorded before it waits as it always had, and replays that way; asked only once a wait is
 * long, so a payout that never waits long records no marker.
 */
export function boundsItsWaits(): boolean {
  return patched('bounded-long-waits');
}

/**
 * Whether the run should hand over now: its history is long (or Temporal suggests it) and no update
 * or signal handler is still at work. Asked only at points where no activity or child is in flight;
 * the patch is asked last, so a run that never grows long records no marker for it.
 */
export function timeToHandOver(): boolean {
  const info = workflowInfo();
  const long = info.historyLength >= HAND_OVER_AT_EVENTS || info.continueAsNewSuggested;
  return long && allHandlersFinished() && boundsItsWaits();
}
