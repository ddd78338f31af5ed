import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

/** How long each query holds the workflow's thread, in real time. */
export const QUERY_HOLD_MS = 1_500;

/**
 * For test/workflow/query-during-local-activity.test.ts only: every query holds the workflow's
 * thread for QUERY_HOLD_MS of real time before it is answered, as a worker busy with other
 * workflows' activations (or a loaded machine) answers late. What a local activity returns meanwhile
 * reaches the SDK while the query is still being answered.
 */
export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      handleQuery(input, next) {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, QUERY_HOLD_MS);
        return next(input);
      },
    },
  ],
});
