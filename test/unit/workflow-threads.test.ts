import { spawnSync } from 'node:child_process';
import path from 'node:path';
import workerThreads from 'node:worker_threads';
import { withWorkflowThreads } from '../../src/temporal/workflow-threads';

// The workflow threads' stack-trace setting (src/temporal/workflow-threads.ts, docs/decisions.md D82),
// on stand-ins for the SDK's thread entry; test/workflow/stack-traces.test.ts runs the real SDK.
const FIXTURES = path.join(__dirname, 'fixtures');
const SDK_THREAD = path.join(FIXTURES, 'workflow', 'workflow-worker-thread.js');
const OTHER_THREAD = path.join(FIXTURES, 'other-thread.js');
const OFF_MESSAGE = 'workflow stack traces are off on this worker (WORKER_WORKFLOW_STACK_TRACES)';
const SDK_WARNING = 'v8.promiseHooks.createHook is not available';

interface Report {
  hook: string;
  stderr: string;
}

/** Starts `file` as a thread (as the SDK's Worker.create does, through the module's Worker) and reads its report. */
function runThread(file: string): Promise<Report> {
  const thread = new workerThreads.Worker(file, { stderr: true });
  thread.stderr.resume();
  return new Promise((resolve, reject) => {
    thread.once('message', (report: Report) => resolve(report));
    thread.once('error', reject);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('workflow threads', () => {
  it('off: the SDK thread cannot install its promise hook, and its warning about that is dropped', async () => {
    const report = await withWorkflowThreads({ stackTraces: false }, () => runThread(SDK_THREAD));
    expect(report.hook).toBe(OFF_MESSAGE);
    expect(report.stderr).not.toContain(SDK_WARNING);
    expect(report.stderr).toContain('another warning');
  });

  it('on, or outside any worker creation, the SDK thread is left as it is', async () => {
    expect((await withWorkflowThreads({ stackTraces: true }, () => runThread(SDK_THREAD))).hook).toBe(
      'installed',
    );
    expect((await runThread(SDK_THREAD)).hook).toBe('installed');
  });

  it('off: threads that are not the SDK workflow thread are left alone', async () => {
    const report = await withWorkflowThreads({ stackTraces: false }, () => runThread(OTHER_THREAD));
    expect(report.hook).toBe('installed');
    expect(report.stderr).toContain(SDK_WARNING);
  });

  it('two creations at once each get their own setting', async () => {
    const [off, on] = await Promise.all([
      withWorkflowThreads({ stackTraces: false }, async () => {
        await sleep(50);
        return runThread(SDK_THREAD);
      }),
      withWorkflowThreads({ stackTraces: true }, () => runThread(SDK_THREAD)),
    ]);
    expect(off.hook).toBe(OFF_MESSAGE);
    expect(on.hook).toBe('installed');
  });

  it('off: a creation that started no SDK thread (debug mode, a renamed SDK file) is reported', async () => {
    const warnings: string[] = [];
    await withWorkflowThreads({ stackTraces: false, warn: (m) => warnings.push(m) }, async () => {});
    expect(warnings).toEqual([expect.stringContaining('workflow stack traces are not off')]);
    warnings.length = 0;
    await withWorkflowThreads({ stackTraces: false, warn: (m) => warnings.push(m) }, () =>
      runThread(SDK_THREAD),
    );
    expect(warnings).toEqual([]);
  });

  it('keeps the flags Node.js refuses in an explicit thread execArgv (--max-old-space-size)', () => {
    const run = spawnSync(
      process.execPath,
      ['--max-old-space-size=256', '--import', 'tsx', path.join(FIXTURES, 'workflow-threads-under-flags.ts')],
      { cwd: path.resolve(__dirname, '../..'), encoding: 'utf8', timeout: 60_000 },
    );
    expect(run.stderr).not.toContain('ERR_WORKER_INVALID_EXEC_ARGV');
    expect(JSON.parse(run.stdout.trim().split('\n').pop()!)).toMatchObject({ hook: OFF_MESSAGE });
  });
});
