import { spawnSync } from 'node:child_process';
import path from 'node:path';
import workerThreads from 'node:worker_threads';
import { withWorkflowThreads } from '../../src/temporal/workflow-threads';

// The workflow threads' stack-trace setting (src/temporal/workflow-threads.ts, docs/decisions.md D82),
// on stand-ins for the SDK's thread entry and its global handlers; test/workflow/stack-traces.test.ts
// runs the real SDK.
const FIXTURES = path.join(__dirname, 'fixtures');
const SDK_THREAD = path.join(FIXTURES, 'workflow', 'workflow-worker-thread.js');
const OTHER_THREAD = path.join(FIXTURES, 'other-thread.js');
const RENAMED_SDK_THREAD = path.join(FIXTURES, 'renamed-sdk', 'workflow', 'workflow-worker-thread.js');

interface Report {
  /** Whether the SDK's handlers installed their promise hook (its stack traces). */
  hook: boolean | string;
  /** What an AsyncLocalStorage store read after an await inside its run. */
  asyncLocalStorage: string;
  stderr: string;
}

/** Starts `file` as a thread (as the SDK's Worker.create does, through the module's Worker) and reads its report. */
function runThread(file: string, options: workerThreads.WorkerOptions = {}): Promise<Report> {
  const thread = new workerThreads.Worker(file, { ...options, stderr: true });
  let stderr = '';
  thread.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let report: Omit<Report, 'stderr'> | undefined;
  thread.once('message', (r: Omit<Report, 'stderr'>) => (report = r));
  return new Promise((resolve, reject) => {
    thread.once('error', reject);
    thread.once('exit', () =>
      report ? resolve({ ...report, stderr }) : reject(new Error(`no report; stderr: ${stderr}`)),
    );
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('workflow threads', () => {
  it("off: the SDK's handlers install no promise hook, and AsyncLocalStorage still works", async () => {
    expect(await withWorkflowThreads({ stackTraces: false }, () => runThread(SDK_THREAD))).toEqual({
      hook: false,
      asyncLocalStorage: 'store',
      stderr: '',
    });
  });

  it('on, or outside any worker creation, the SDK thread is left as it is', async () => {
    const on = { hook: true, asyncLocalStorage: 'store', stderr: '' };
    expect(await withWorkflowThreads({ stackTraces: true }, () => runThread(SDK_THREAD))).toEqual(on);
    expect(await runThread(SDK_THREAD)).toEqual(on);
  });

  it('off: threads that are not the SDK workflow thread are left alone', async () => {
    expect((await withWorkflowThreads({ stackTraces: false }, () => runThread(OTHER_THREAD))).hook).toBe(
      true,
    );
  });

  it('two creations at once each get their own setting', async () => {
    const [off, on] = await Promise.all([
      withWorkflowThreads({ stackTraces: false }, async () => {
        await sleep(50);
        return runThread(SDK_THREAD);
      }),
      withWorkflowThreads({ stackTraces: true }, () => runThread(SDK_THREAD)),
    ]);
    expect(off.hook).toBe(false);
    expect(on.hook).toBe(true);
  });

  it('off, on an SDK without those handlers: its thread starts as it is, and the creation is reported', async () => {
    const warnings: string[] = [];
    const report = await withWorkflowThreads({ stackTraces: false, warn: (m) => warnings.push(m) }, () =>
      runThread(RENAMED_SDK_THREAD),
    );
    expect(report).toEqual({ hook: 'no handlers', asyncLocalStorage: 'store', stderr: '' });
    expect(warnings).toEqual([expect.stringContaining('workflow stack traces are not off')]);
  });

  it('off: a creation that started no SDK thread (debug mode, a renamed entry) is reported', async () => {
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
    expect(JSON.parse(run.stdout.trim().split('\n').pop()!)).toEqual({
      hook: false,
      asyncLocalStorage: 'store',
    });
  });

  it('off: the thread entry also runs where eval is an ES module (--input-type=module)', async () => {
    const report = await withWorkflowThreads({ stackTraces: false }, () =>
      runThread(SDK_THREAD, { execArgv: ['--input-type=module'] }),
    );
    expect(report).toEqual({ hook: false, asyncLocalStorage: 'store', stderr: '' });
  });
});
