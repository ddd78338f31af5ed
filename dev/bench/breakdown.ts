import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { Db } from '../../src/adapters/db/pool';

/**
 * Where the time from payment to COMPLETED goes, read from what the servers recorded: the payout
 * workflow's history (event times, stamped by the Temporal server) between the bench's payment and
 * the GET that first saw COMPLETED. Both ends are the bench's clock, the events the server's: on one
 * machine they are the same clock.
 */

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** One payout's timeline: the step each interval ends with, and how long it took. */
export interface Timeline {
  payoutId: string;
  steps: { step: string; ms: number }[];
}

export interface PaidPayout {
  payoutId: string;
  /** Epoch ms: when the bench asked the sandbox's bank to pay. */
  paidAt: number;
  /** Epoch ms: when a GET first answered COMPLETED. */
  seenAt: number;
}

const ms = (t: HistoryEvent['eventTime']) =>
  t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : NaN;

/**
 * The steps, in the order a provider-mode payout takes them. Each names the event that ends it; the
 * interval before it is the step's time. Local activities run inside a workflow task and leave a
 * marker when that task completes, so their time is part of the task that ran them.
 */
export async function timelineOf(client: Client, db: Db, payout: PaidPayout): Promise<Timeline> {
  const { rows } = await db.query<{ workflow_id: string }>('SELECT workflow_id FROM payouts WHERE id = $1', [
    payout.payoutId,
  ]);
  const workflowId = rows[0]?.workflow_id;
  if (!workflowId) throw new Error(`payout ${payout.payoutId} has no read-model row`);
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const activityNames = new Map<string, string>();
  const steps: { step: string; ms: number }[] = [];
  let last = payout.paidAt;
  let signals = 0;
  const push = (step: string, at: number) => {
    // A signal received while a workflow task ran is written after it, stamped when it arrived: its
    // step took no time of its own on the path, it overlapped the one before.
    if (at < last) {
      steps.push({ step: `${step} (arrived during the step before)`, ms: 0 });
      return;
    }
    steps.push({ step, ms: at - last });
    last = at;
  };
  for (const event of events) {
    const at = ms(event.eventTime);
    // What the workflow does after a GET saw COMPLETED (the read-model write, the callback) is not
    // on the partner's path.
    if (at > payout.seenAt) break;
    if (at < payout.paidAt) {
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (scheduled) activityNames.set(String(event.eventId), scheduled.activityType?.name ?? '?');
      continue;
    }
    if (event.workflowExecutionSignaledEventAttributes) {
      signals += 1;
      push(
        signals === 1
          ? 'payment webhook: sandbox notifies, the api reads the event back and signals the payout'
          : signals === 2
            ? 'provider settles: request answered to settlement.completed webhook, read back and signalled'
            : `signal ${signals}`,
        at,
      );
    } else if (event.activityTaskScheduledEventAttributes) {
      const name = event.activityTaskScheduledEventAttributes.activityType?.name ?? '?';
      activityNames.set(String(event.eventId), name);
      push(`workflow task until ${name} is scheduled`, at);
    } else if (event.activityTaskStartedEventAttributes) {
      const name =
        activityNames.get(String(event.activityTaskStartedEventAttributes.scheduledEventId)) ?? '?';
      push(`${name}: activity task dispatched to a worker`, at);
    } else if (event.activityTaskCompletedEventAttributes) {
      const name =
        activityNames.get(String(event.activityTaskCompletedEventAttributes.scheduledEventId)) ?? '?';
      push(`${name}: runs`, at);
    } else if (event.workflowTaskCompletedEventAttributes) {
      push('workflow task (with its local activities)', at);
    } else if (event.workflowExecutionCompletedEventAttributes) {
      push('workflow completes', at);
    } else if (event.workflowTaskScheduledEventAttributes) {
      push('until a workflow task is scheduled', at);
    } else if (event.workflowTaskStartedEventAttributes) {
      push('workflow task dispatched to a worker', at);
    }
  }
  steps.push({ step: 'until a GET (polling every few ms) sees COMPLETED', ms: payout.seenAt - last });
  return { payoutId: payout.payoutId, steps };
}

/** The median of each step across the payouts whose timelines have the most common shape. */
export function medianTimeline(timelines: Timeline[]): {
  payouts: number;
  steps: { step: string; ms: number }[];
} {
  if (timelines.length === 0) return { payouts: 0, steps: [] };
  const shape = (t: Timeline) => t.steps.map((s) => s.step).join('|');
  const counts = new Map<string, Timeline[]>();
  for (const t of timelines) counts.set(shape(t), [...(counts.get(shape(t)) ?? []), t]);
  const alike = [...counts.values()].reduce((a, b) => (b.length > a.length ? b : a));
  return {
    payouts: alike.length,
    steps: alike[0]!.steps.map((s, i) => {
      const values = alike.map((t) => t.steps[i]!.ms).sort((a, b) => a - b);
      return { step: s.step, ms: values[Math.floor(values.length / 2)]! };
    }),
  };
}
