import workerThreads from 'node:worker_threads';

/**
 * How the Temporal SDK's workflow threads start (docs/decisions.md D82).
 *
 * The SDK runs workflows in worker threads of its own and, in each, installs a V8 promise hook that
 * captures a stack trace, mapped through the bundle's source map, for every promise a workflow
 * creates: what the Web UI's "Stack Trace" tab (the `__stack_trace` query) shows of a workflow that
 * waits. Measured here (docs/BENCHMARKS.md), that hook was about a third of the workflow thread's CPU
 * on a payout's first task and on a live GET's query. The SDK has no option for it, but it has a path
 * for runtimes without promise hooks (Bun, older Node.js): no hook, and the stack-trace query answers
 * "Workflow stack traces are not enabled on this worker". With stack traces off, the workflow threads
 * start with a module (`--import`, before the SDK's own code) under which the hook cannot be
 * installed, so the SDK takes that path. Nothing else of the thread changes: the deadlock watchdog
 * (a workflow that does not yield within 5 s fails its task) stays.
 */

/** The SDK's workflow thread entry (@temporalio/worker/lib/workflow/workflow-worker-thread.js). */
const SDK_WORKFLOW_THREAD = /[\\/]workflow[\\/]workflow-worker-thread\.js$/;

/** The SDK's message when it finds no promise hooks, which would read as a broken runtime here. */
const SDK_NO_HOOKS_WARNING = 'v8.promiseHooks.createHook is not available';

const STACK_TRACES_OFF_MODULE = `
import v8 from 'node:v8';
v8.promiseHooks.createHook = () => {
  throw new Error('workflow stack traces are off on this worker (WORKER_WORKFLOW_STACK_TRACES)');
};
const warn = console.warn;
console.warn = (...args) => {
  if (typeof args[0] === 'string' && args[0].startsWith(${JSON.stringify(SDK_NO_HOOKS_WARNING)})) {
    console.warn = warn;
    return;
  }
  warn(...args);
};
`;

const STACK_TRACES_OFF = `data:text/javascript,${encodeURIComponent(STACK_TRACES_OFF_MODULE)}`;

let offCreates = 0;
let sdkWorker: typeof workerThreads.Worker | undefined;

/**
 * Runs `create` (a `Worker.create`, which starts the SDK's workflow threads) with the threads it
 * starts taking the stack-trace setting. Off: every SDK workflow thread started while any such
 * `create` runs in this process starts without the hook. Other threads are started as they ask.
 */
export async function withWorkflowThreads<T>(
  opts: { stackTraces: boolean },
  create: () => Promise<T>,
): Promise<T> {
  if (opts.stackTraces) return create();
  if (offCreates++ === 0) {
    const Original = workerThreads.Worker;
    sdkWorker = Original;
    class WorkflowThread extends Original {
      constructor(filename: string | URL, options?: workerThreads.WorkerOptions) {
        super(
          filename,
          SDK_WORKFLOW_THREAD.test(String(filename))
            ? {
                ...options,
                execArgv: [...(options?.execArgv ?? process.execArgv), '--import', STACK_TRACES_OFF],
              }
            : options,
        );
      }
    }
    workerThreads.Worker = WorkflowThread;
  }
  try {
    return await create();
  } finally {
    if (--offCreates === 0 && sdkWorker) {
      workerThreads.Worker = sdkWorker;
      sdkWorker = undefined;
    }
  }
}
