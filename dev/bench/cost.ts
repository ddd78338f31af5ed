import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';

/**
 * What one payout costs Temporal, counted from the histories of every workflow the payouts of a
 * measured window ran: the payout workflows themselves, and the provider-event and partner-callback
 * workflows started in the window (divided by the payouts completed in it).
 *
 * Actions are estimated from history as Temporal Cloud bills them (docs.temporal.io, "Temporal Cloud
 * Actions"): a workflow started, each activity attempt, the local activities of one workflow task
 * (one action together), a timer, a signal, an update, a search-attribute upsert. What history does
 * not show is left out and named in the report: queries (a live GET is one), and heartbeats (the
 * service's activities do not heartbeat).
 */

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export interface WorkflowCost {
  workflows: number;
  historyEvents: number;
  workflowTasks: number;
  activityTasks: number;
  localActivities: number;
  timers: number;
  signals: number;
  updates: number;
  searchAttributeUpserts: number;
  actions: number;
}

const zero = (): WorkflowCost => ({
  workflows: 0,
  historyEvents: 0,
  workflowTasks: 0,
  activityTasks: 0,
  localActivities: 0,
  timers: 0,
  signals: 0,
  updates: 0,
  searchAttributeUpserts: 0,
  actions: 0,
});

/** One history's counts. */
export function costOf(events: HistoryEvent[]): WorkflowCost {
  const c = zero();
  c.workflows = 1;
  c.historyEvents = events.length;
  let localInTask = false;
  for (const e of events) {
    if (e.workflowExecutionStartedEventAttributes) c.actions += 1;
    if (e.workflowTaskCompletedEventAttributes) {
      c.workflowTasks += 1;
      localInTask = false;
    }
    if (e.activityTaskStartedEventAttributes) {
      // Every attempt is billed; history keeps the last attempt's number.
      const attempts = Math.max(1, e.activityTaskStartedEventAttributes.attempt ?? 1);
      c.activityTasks += attempts;
      c.actions += attempts;
    }
    if (e.markerRecordedEventAttributes?.markerName === 'core_local_activity') {
      c.localActivities += 1;
      // The local activities recorded by one workflow task are one action together.
      if (!localInTask) c.actions += 1;
      localInTask = true;
    }
    if (e.timerStartedEventAttributes) {
      c.timers += 1;
      c.actions += 1;
    }
    if (e.workflowExecutionSignaledEventAttributes) {
      c.signals += 1;
      c.actions += 1;
    }
    if (e.workflowExecutionUpdateAcceptedEventAttributes) {
      c.updates += 1;
      c.actions += 1;
    }
    if (e.upsertWorkflowSearchAttributesEventAttributes) {
      c.searchAttributeUpserts += 1;
      c.actions += 1;
    }
  }
  return c;
}

function add(a: WorkflowCost, b: WorkflowCost): WorkflowCost {
  const out = zero();
  for (const k of Object.keys(out) as (keyof WorkflowCost)[]) out[k] = a[k] + b[k];
  return out;
}

function per(a: WorkflowCost, n: number): WorkflowCost {
  const out = zero();
  for (const k of Object.keys(out) as (keyof WorkflowCost)[]) out[k] = Number((a[k] / n).toFixed(2));
  return out;
}

/**
 * The cost per payout of `payoutWorkflowIds` (completed in the window that began at `since`), by
 * workflow type: the payout workflow's own, and its share of every other workflow type started since.
 */
export async function costPerPayout(
  client: Client,
  payoutWorkflowIds: string[],
  since: Date,
): Promise<{ payouts: number; byType: Record<string, WorkflowCost>; total: WorkflowCost }> {
  const byType: Record<string, WorkflowCost> = {};
  const tally = async (type: string, workflowId: string, runId?: string) => {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    byType[type] = add(byType[type] ?? zero(), costOf(history.events ?? []));
  };
  for (const id of payoutWorkflowIds) await tally('payoutWorkflow', id);
  for (const type of ['providerEventWorkflow', 'callbackDeliveryWorkflow', 'refundWorkflow']) {
    const query = `WorkflowType = '${type}' AND StartTime >= '${since.toISOString()}'`;
    for await (const wf of client.workflow.list({ query })) await tally(type, wf.workflowId, wf.runId);
  }
  const n = Math.max(1, payoutWorkflowIds.length);
  const perType = Object.fromEntries(Object.entries(byType).map(([t, c]) => [t, per(c, n)]));
  const total = per(Object.values(byType).reduce(add, zero()), n);
  return { payouts: payoutWorkflowIds.length, byType: perType, total };
}
