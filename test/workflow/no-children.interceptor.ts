import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

/**
 * Workflow unit tests only: child workflows (the partner callback the payout starts when it ends,
 * ABANDON) are not started. They are another component with its own tests, and the Java
 * time-skipping test server mishandles a child that outlives its parent (it keeps a time-skipping
 * lock, so every later timer in the file would run in real time).
 */
export const interceptors: WorkflowInterceptorsFactory = () => ({
  outbound: [
    {
      async startChildWorkflowExecution() {
        return [Promise.resolve('child-not-started-in-unit-tests'), new Promise<never>(() => {})];
      },
    },
  ],
});
