import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DeterminismViolationError } from '@temporalio/workflow';
import { Worker } from '@temporalio/worker';
import { testBundle } from '../workflow/harness';
import { historyFromObject } from './history-json';
import { tracingSinks } from '../../src/temporal/tracing';

// Histories recorded from complete runs of the released workflow code (record-histories.ts), replayed
// against the code as it is now. A change that would break running payouts (another activity, a
// reordered step, a timer added or removed without a patch) fails here instead of in production.
const DIR = path.join(__dirname, 'histories');
const fixtures = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();

const load = (file: string) => historyFromObject(JSON.parse(readFileSync(path.join(DIR, file), 'utf8')));

describe('workflow replay', () => {
  beforeAll(() => testBundle(), 60_000);

  it('has fixtures for the main paths', () => {
    expect(fixtures).toEqual(
      expect.arrayContaining([
        'payout-provider-completed.json',
        'payout-provider-failed.json',
        'payout-charge-expired.json',
        'payout-treasury-overdue-completed.json',
        'payout-treasury-blocked-completed.json',
        'payout-provider-status-completed.json',
        'provider-event-late-payment.json',
        'refund-returned.json',
        'refund-approved.json',
      ]),
    );
  });

  it.each(fixtures)('replays %s deterministically', async (file) => {
    await Worker.runReplayHistory(
      { sinks: tracingSinks(), workflowBundle: await testBundle() },
      load(file),
      file,
    );
  });

  it('catches a history the code no longer produces (the check has teeth)', async () => {
    const history = load('payout-provider-completed.json');
    // As if the workflow had once called another activity at this step (the COMPLETED write).
    const scheduled = history.events.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'recordPayout',
    );
    scheduled!.activityTaskScheduledEventAttributes!.activityType!.name = 'recordPayoutV0';
    await expect(
      Worker.runReplayHistory(
        { sinks: tracingSinks(), workflowBundle: await testBundle() },
        history,
        'tampered',
      ),
    ).rejects.toBeInstanceOf(DeterminismViolationError);
  });
});
