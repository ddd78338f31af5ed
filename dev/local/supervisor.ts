import { describeExit, type ExitStatus } from './infra/processes';
import { nextRestartDelay, restartDelay, RESTART_BACKOFF_MS } from './restart-policy';

// Every part of the local stack (PostgreSQL, Temporal, anvil, the sandbox, the worker, the api) is
// watched the same way: a death is logged at once with its exit status, and the part is started
// again after the backoff of restart-policy.ts, until the launcher stops it.

/** One running instance of a part. */
export interface Running {
  pid: number | undefined;
  exited: Promise<ExitStatus>;
  stop(): Promise<void>;
}

export interface Part {
  name: string;
  /** Starts an instance; resolves once it serves (what "started" means is the part's business). */
  start(): Promise<Running>;
}

type Say = (line: string, level?: 'info' | 'warn' | 'error') => void;

export class Supervised {
  private current: Running | undefined;
  private launching: Promise<Running> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly part: Part,
    private readonly say: Say,
  ) {}

  get name(): string {
    return this.part.name;
  }

  /** The first start: a failure here is the stack's failure to start, not a crash to retry. */
  start(): Promise<Running> {
    return this.launch(RESTART_BACKOFF_MS.first);
  }

  /** Stops watching, cancels a pending restart, and stops the instance (one being started too). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.launching?.catch(() => undefined);
    await this.current?.stop();
  }

  private launch(backoffMs: number): Promise<Running> {
    const launching = (async () => {
      const startedAt = Date.now();
      const running = await this.part.start();
      this.current = running;
      void running.exited.then((status) => this.onExit(running, status, backoffMs, startedAt));
      return running;
    })();
    this.launching = launching;
    return launching.finally(() => {
      if (this.launching === launching) this.launching = undefined;
    });
  }

  private onExit(running: Running, status: ExitStatus, backoffMs: number, startedAt: number): void {
    if (this.stopped || this.current !== running) return;
    this.current = undefined;
    const delay = restartDelay(backoffMs, Date.now() - startedAt);
    this.say(
      `${this.name} (pid ${running.pid}) exited unexpectedly (${describeExit(status)}); restarting it in ${delay / 1000}s`,
      'error',
    );
    this.scheduleRestart(delay);
  }

  private scheduleRestart(delay: number): void {
    this.timer = setTimeout(() => {
      if (this.stopped) return;
      this.launch(nextRestartDelay(delay)).then(
        (running) => {
          if (!this.stopped) this.say(`${this.name} restarted (pid ${running.pid})`);
        },
        (err: unknown) => {
          if (this.stopped) return;
          const next = nextRestartDelay(delay);
          this.say(
            `${this.name} did not restart: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}; trying again in ${next / 1000}s`,
            'error',
          );
          this.scheduleRestart(next);
        },
      );
    }, delay);
  }
}
