import { proxyActivities } from '@temporalio/workflow';

/**
 * The floor the service is measured against: the least a Temporal workflow that does one piece of
 * work can cost on this server. One workflow task, one no-op activity, one more workflow task to
 * complete: the same round trips a payout's POST cannot avoid (start, schedule the charge, answer).
 */
const { noop } = proxyActivities<{ noop(): Promise<void> }>({ startToCloseTimeout: '10 seconds' });

export async function floorWorkflow(): Promise<string> {
  await noop();
  return 'done';
}
