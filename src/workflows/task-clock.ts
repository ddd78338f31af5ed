import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

/**
 * The time a workflow stamps on what it decides (a payout's `updatedAt`, a `confirmedAt` of its
 * own): the start of the workflow task in which it last woke on anything but a local activity's
 * result (docs/decisions.md D80). Never `Date.now()` right after a local activity: that clock is the
 * activity's completion time on a replay, but in the run itself it can be the start of a later task
 * (the SDK answered a query while the activity returned, completed the task with the activity's
 * marker and handed the result to the workflow only in the task it forced after it). The run's value
 * lands in the read model, the replay's answers queries: two clocks for one transition.
 *
 * Sampled as each activation arrives, and only when no local activity is in flight: such an
 * activation starts a workflow task, with the same timestamp in the run and in every replay. One that
 * arrives while a local activity runs may resolve it, or be merged with its resolution on replay, so
 * it leaves the clock where it was.
 *
 * Registered with the workflow bundle (src/workflow-bundle.ts). A bundle without it falls back to
 * the workflow's own clock.
 */
class TaskClock {
  private inFlight = 0;
  private sampled: number | undefined;

  arrived(): void {
    if (this.inFlight === 0) this.sampled = Date.now();
  }

  async around<T>(run: () => Promise<T>): Promise<T> {
    this.inFlight++;
    try {
      return await run();
    } finally {
      this.inFlight--;
    }
  }

  now(): string {
    return new Date(this.sampled ?? Date.now()).toISOString();
  }
}

// Module state is per workflow execution: the SDK gives each workflow its own module instances.
const clock = new TaskClock();

/** The workflow's time for what it decides now, as an ISO 8601 string (see TaskClock). */
export function taskTime(): string {
  return clock.now();
}

export const interceptors: WorkflowInterceptorsFactory = () => ({
  internals: [
    {
      activate(input, next) {
        clock.arrived();
        next(input);
      },
    },
  ],
  outbound: [
    {
      scheduleLocalActivity(input, next) {
        return clock.around(() => next(input));
      },
    },
  ],
});
