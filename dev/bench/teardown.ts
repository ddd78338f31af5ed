/**
 * What the bench started, stopped in reverse order: at the end of a run, and on SIGINT, SIGTERM or
 * SIGHUP, which would otherwise end the bench at once and leave its servers running (the stack's
 * launcher, a Temporal server, its PostgreSQL, which runs in a process group of its own and so never
 * sees a Ctrl-C). Each step is added as soon as its process exists, so a signal during start-up
 * stops what already runs.
 */
export class Teardown {
  private readonly steps: { name: string; stop: () => Promise<void> }[] = [];
  private running: Promise<void> | undefined;
  /** Set once a signal asked the bench to stop: the run's results are incomplete. */
  interrupted: NodeJS.Signals | undefined;

  constructor(private readonly log: (line: string) => void) {}

  /** Stops are idempotent (ManagedProcess.stop and the handles' stop are). */
  add(name: string, stop: () => Promise<void>): void {
    this.steps.push({ name, stop });
  }

  /** Runs every step not run yet, newest first; a failing step does not keep the others from running. */
  run(): Promise<void> {
    this.running ??= (async () => {
      for (let step = this.steps.pop(); step; step = this.steps.pop()) {
        const started = Date.now();
        await step
          .stop()
          .catch((err: unknown) => this.log(`${step!.name} did not stop cleanly: ${String(err)}`));
        if (this.interrupted)
          this.log(`stopped ${step.name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
      }
      this.running = undefined;
    })();
    return this.running;
  }

  /** On the first signal: stop everything, then exit 130. A second signal only says it is stopping. */
  onSignals(): void {
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.on(signal, () => {
        if (this.interrupted) {
          this.log(`${signal}: still stopping what the bench started`);
          return;
        }
        this.interrupted = signal;
        this.log(`${signal}: stopping what the bench started (results of this run are not written)`);
        void this.run().finally(() => process.exit(130));
      });
    }
  }
}
