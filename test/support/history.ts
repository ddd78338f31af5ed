import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

const SCHEDULED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED;

export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** A workflow's history, oldest event first. */
export async function historyOf(handle: WorkflowHandle): Promise<HistoryEvent[]> {
  return (await handle.fetchHistory()).events ?? [];
}

/**
 * The workflow has handled everything that happened to it so far: no workflow task waits to run
 * and no activity is under way (one waiting out its retry backoff is not). What it does next waits
 * on a timer, a retry or a signal; a test then reads its state knowing that no step in progress can
 * still change it.
 */
export async function isIdle(handle: WorkflowHandle): Promise<boolean> {
  const { raw } = await handle.describe();
  const retrying = (a: temporal.api.workflow.v1.IPendingActivityInfo) =>
    a.state === SCHEDULED && (a.attempt ?? 1) > 1;
  return !raw.pendingWorkflowTask && (raw.pendingActivities ?? []).every(retrying);
}

/**
 * Where the workflow's first timer of `seconds` stands in its history: the index of the event that
 * started it and of the one that fired it (-1 while it has not).
 */
export function timerOf(events: HistoryEvent[], seconds: number): { started: number; fired: number } {
  const started = events.findIndex(
    (e) => Number(e.timerStartedEventAttributes?.startToFireTimeout?.seconds ?? -1) === seconds,
  );
  if (started === -1) return { started, fired: -1 };
  const timerId = events[started]!.timerStartedEventAttributes!.timerId;
  const fired = events.findIndex((e) => e.timerFiredEventAttributes?.timerId === timerId);
  return { started, fired };
}

/** The indexes of the signals the workflow received, in order. */
export function signalsIn(events: HistoryEvent[]): number[] {
  return events.flatMap((e, i) => (e.workflowExecutionSignaledEventAttributes ? [i] : []));
}
