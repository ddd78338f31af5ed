import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { historyFromObject } from './history-json';
import { tracingSinks } from '../../src/temporal/tracing';

// docs/workflow-changes.md, proven: a change to the payout workflow made behind `patched()` still
// replays every recorded history of the old code (payouts in flight keep running), and the same
// change made without the guard does not (so this test can fail). The change is applied to the real
// workflow source while it is bundled (workflow-change-loader.js).

const DIR = path.join(__dirname, 'histories');
const payoutHistories = readdirSync(DIR)
  .filter((f) => f.startsWith('payout-') && f.endsWith('.json'))
  .sort();
const load = (file: string) => historyFromObject(JSON.parse(readFileSync(path.join(DIR, file), 'utf8')));

const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

function bundleWithChange(guarded: boolean): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath: require.resolve('../../src/workflows'),
    logger: silent,
    webpackConfigHook: (config) => {
      config.module?.rules?.push({
        test: /payout\.workflow\.ts$/,
        enforce: 'pre',
        use: [{ loader: require.resolve('./workflow-change-loader.js'), options: { guarded } }],
      });
      return config;
    },
  });
}

describe('a workflow change behind patched() (docs/workflow-changes.md)', () => {
  let patched: WorkflowBundleWithSourceMap;
  let unguarded: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    patched = await bundleWithChange(true);
    unguarded = await bundleWithChange(false);
  }, 120_000);

  it('has recorded payout histories to replay', () => {
    expect(payoutHistories.length).toBeGreaterThanOrEqual(4);
  });

  it.each(payoutHistories)('still replays %s recorded by the old code', async (file) => {
    await Worker.runReplayHistory({ sinks: tracingSinks(), workflowBundle: patched }, load(file), file);
  });

  it.each(payoutHistories)('the same change without patched() breaks %s', async (file) => {
    await expect(
      Worker.runReplayHistory({ sinks: tracingSinks(), workflowBundle: unguarded }, load(file), file),
    ).rejects.toBeInstanceOf(DeterminismViolationError);
  });
});
