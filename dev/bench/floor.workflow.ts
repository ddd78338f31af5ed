import { condition, defineQuery, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';

/**
 * The floors the service is measured against, on the same server in the same run (docs/BENCHMARKS.md).
 *
 * `floorWorkflow`: the least a Temporal workflow that does one piece of work can cost. One workflow
 * task, one no-op activity, one more workflow task to complete.
 *
 * `openFloorWorkflow`: the least a POST and a live GET can cost. Its update answers at once (a bare
 * update-with-start of a workflow that stays open, as POST starts a payout and waits for an update),
 * and its query answers its state (as a live GET queries an open payout).
 */
const { noop } = proxyActivities<{ noop(): Promise<void> }>({ startToCloseTimeout: '10 seconds' });

export async function floorWorkflow(): Promise<string> {
  await noop();
  return 'done';
}

export const readyUpdate = defineUpdate<string>('ready');
export const stateQuery = defineQuery<string>('state');
export async function openFloorWorkflow(): Promise<void> {
  setHandler(readyUpdate, () => 'ready');
  setHandler(stateQuery, () => 'open');
  // Open, as a PENDING payout is, until the execution timeout the bench starts it with.
  await condition(() => false);
}
