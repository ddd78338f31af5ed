import { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
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
 * thread: Node.js 22 builds AsyncLocalStorage on them, and the SDK runs every update handler in one.
 * Nothing else of the thread changes: its flags are inherited as Node.js does by default (an explicit
 * list would refuse flags such as --max-old-space-size), the SDK still source-maps the stack traces of
 * failures, and its deadlock watchdog (a workflow that does not yield within 5 s fails its task) stays.
 */

/** The SDK's workflow thread entry (@temporalio/worker/lib/workflow/workflow-worker-thread.js). */
const SDK_WORKFLOW_THREAD = /[\\/]workflow[\\/]workflow-worker-thread\.js$/;

/** The SDK's module beside its thread entry that installs the hook (vm-shared.js in SDK 1.24). */
function sdkHandlersModule(sdkThreadFile: string): string {
  return path.join(path.dirname(sdkThreadFile), 'vm-shared.js');
}

/**
 * Whether the SDK at `sdkThreadFile` has the handlers this code turns off, read from its file in the
 * main thread (not loaded: under a test runner, a loader kept by the one Worker class of the process
 * would belong to a test file long gone), so a later SDK without them is reported by
 * `withWorkflowThreads` and its thread started as it is. The thread entry checks them again.
 */
function hasSdkHandlers(sdkThreadFile: string): boolean {
  try {
    return /\bsetPromiseHook\(\)\s*\{/.test(readFileSync(sdkHandlersModule(sdkThreadFile), 'utf8'));
  } catch {
    return false;
  }
}

/**
 * A workflow thread without stack traces: the SDK's hook installation made a no-op in its module
 * before the SDK's thread code loads it. Written as CommonJS, and loading through `createRequire`
 * where the eval is an ES module (`--input-type=module` in NODE_OPTIONS).
 */
function threadWithoutStackTraces(sdkThreadFile: string): string {
  const file = JSON.stringify(sdkThreadFile);
  return `
const load = typeof require === 'function' ? require : process.getBuiltinModule('node:module').createRequire(${file});
try {
  load(${JSON.stringify(sdkHandlersModule(sdkThreadFile))}).globalHandlers.setPromiseHook = () => {};
} catch (err) {
  console.error('workflow stack traces are not off (WORKER_WORKFLOW_STACK_TRACES, D82): ' + err.message);
}
load(${file});
`;
}

interface ThreadSetting {
  stackTraces: boolean;
  /** SDK workflow threads started under this setting. */
  started: number;
}

/**
 * One per process, whichever copies of this module are loaded (a test runner's module registries, each
 * with a globalThis of its own, a bundle beside the sources): kept on the worker_threads module itself,
 * which they all share. The Worker class is replaced once and never put back, and each SDK workflow
 * thread takes the setting of the `withWorkflowThreads` call whose `create` started it.
 */
interface Installed {
  setting: AsyncLocalStorage<ThreadSetting>;
}
const INSTALLED = Symbol.for('pix-usdt-payouts.workflow-threads');

function install(): Installed {
  const registry = workerThreads as unknown as { [INSTALLED]?: Installed };
  const existing = registry[INSTALLED];
  if (existing) return existing;
  const installed: Installed = { setting: new AsyncLocalStorage<ThreadSetting>() };
  const { setting } = installed;
  const Original = workerThreads.Worker;
  class WorkflowThread extends Original {
    constructor(filename: string | URL, options?: workerThreads.WorkerOptions) {
      const wanted = setting.getStore();
      // The SDK names its entry by path (require.resolve); anything else is not its workflow thread.
      const sdkThread =
        wanted !== undefined &&
        typeof filename === 'string' &&
        !options?.eval &&
        SDK_WORKFLOW_THREAD.test(filename) &&
        hasSdkHandlers(filename);
      if (sdkThread) wanted.started += 1;
      if (sdkThread && !wanted.stackTraces) {
        super(threadWithoutStackTraces(filename), { ...options, eval: true });
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
 * traces off, a `create` that started no SDK workflow thread this code knows (the SDK's debug mode
 * runs workflows in the main thread; a later SDK may name its thread file or its handlers otherwise)
 * has its traces on: `warn` says so.
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
