import { AsyncLocalStorage } from 'node:async_hooks';
import path from 'node:path';
import workerThreads from 'node:worker_threads';

/**
 * How the Temporal SDK's workflow threads start (docs/decisions.md D82).
 *
 * The SDK runs workflows in worker threads of its own and, in each, installs a V8 promise hook that
 * captures a stack trace, mapped through the bundle's source map, for every promise a workflow
 * creates: what the Web UI's "Stack Trace" tab (the `__stack_trace` query) shows of a workflow that
 * waits. Measured here, that hook was about a third of the workflow thread's CPU on a payout's first
 * task and on a live GET's query (docs/BENCHMARKS.md). The SDK has no option for it, but it has a state
 * for runtimes without promise hooks (Bun, older Node.js): no hook, and the stack-trace queries answer
 * "Workflow stack traces are not enabled on this worker". With stack traces off, a workflow thread
 * first makes the SDK's installation of that one hook a no-op (its `globalHandlers.setPromiseHook`),
 * then loads the SDK's own thread code. V8's promise hooks stay available to everything else in the
 * thread: Node.js builds AsyncLocalStorage on them, and the SDK runs every update handler in one.
 * Nothing else of the thread changes: its flags are inherited as Node.js does by default (an explicit
 * list would refuse flags such as --max-old-space-size), the SDK still source-maps the stack traces of
 * failures, and its deadlock watchdog (a workflow that does not yield within 5 s fails its task) stays.
 */

/** The SDK's workflow thread entry (@temporalio/worker/lib/workflow/workflow-worker-thread.js). */
const SDK_WORKFLOW_THREAD = /[\\/]workflow[\\/]workflow-worker-thread\.js$/;

/**
 * A workflow thread without stack traces: the SDK's hook installation made a no-op in its module
 * (vm-shared.js, beside the thread entry) before the SDK's thread code loads it. A later SDK where
 * that module or method is gone starts with stack traces on, and says so on stderr.
 */
function threadWithoutStackTraces(sdkThreadFile: string): string {
  return `
try {
  const { globalHandlers } = require(${JSON.stringify(path.join(path.dirname(sdkThreadFile), 'vm-shared.js'))});
  if (typeof globalHandlers.setPromiseHook !== 'function') throw new Error('no globalHandlers.setPromiseHook');
  globalHandlers.setPromiseHook = () => {};
} catch (err) {
  console.error('workflow stack traces are not off (WORKER_WORKFLOW_STACK_TRACES, D82): ' + err.message);
}
require(${JSON.stringify(sdkThreadFile)});
`;
}

interface ThreadSetting {
  stackTraces: boolean;
  /** SDK workflow threads started under this setting. */
  started: number;
}

/**
 * One per process, whichever copies of this module are loaded (a test runner's module registries, a
 * bundle beside the sources): the Worker class is replaced once and never put back, and each SDK
 * workflow thread takes the setting of the `withWorkflowThreads` call whose `create` started it.
 */
interface Installed {
  setting: AsyncLocalStorage<ThreadSetting>;
}
const INSTALLED = Symbol.for('pix-usdt-payouts.workflow-threads');

function install(): Installed {
  const registry = globalThis as { [INSTALLED]?: Installed };
  const existing = registry[INSTALLED];
  if (existing) return existing;
  const installed: Installed = { setting: new AsyncLocalStorage<ThreadSetting>() };
  const { setting } = installed;
  const Original = workerThreads.Worker;
  class WorkflowThread extends Original {
    constructor(filename: string | URL, options?: workerThreads.WorkerOptions) {
      const wanted = setting.getStore();
      // The SDK names its entry by path (require.resolve); anything else is not its workflow thread.
      const sdkThread = typeof filename === 'string' && !options?.eval && SDK_WORKFLOW_THREAD.test(filename);
      if (wanted && sdkThread) wanted.started += 1;
      if (wanted && sdkThread && !wanted.stackTraces) {
        super(threadWithoutStackTraces(filename as string), { ...options, eval: true });
      } else {
        super(filename, options);
      }
    }
  }
  workerThreads.Worker = WorkflowThread;
  registry[INSTALLED] = installed;
  return installed;
}

/**
 * Runs `create` (a `Worker.create`, which starts the SDK's workflow threads) with the threads it
 * starts taking the stack-trace setting; threads started by anything else are left as asked. With
 * traces off, a `create` that started no SDK workflow thread (the SDK's debug mode runs workflows in
 * the main thread; a later SDK may name its thread file otherwise) has its traces on: `warn` says so.
 */
export async function withWorkflowThreads<T>(
  opts: { stackTraces: boolean; warn?: (message: string) => void },
  create: () => Promise<T>,
): Promise<T> {
  const setting: ThreadSetting = { stackTraces: opts.stackTraces, started: 0 };
  const created = await install().setting.run(setting, create);
  if (!opts.stackTraces && setting.started === 0)
    opts.warn?.(
      'workflow stack traces are not off: the Temporal SDK started no workflow thread this service recognizes (D82)',
    );
  return created;
}
