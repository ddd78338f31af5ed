import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { until } from './until';

const ROOT = path.resolve(__dirname, '../..');

/**
 * A service entry point (`src/worker.ts`, `src/main/api.ts`) as its own OS process, started the
 * way it is deployed (node itself, no wrapper process in between, so a SIGKILL hits the service
 * itself): on its compiled JavaScript when `entry` is a .js file (test/support/compiled.ts, as the
 * image runs dist/), else on the TypeScript source with tsx's loader. Its JSON log lines are kept
 * for waiting on events and for error messages.
 */
export class ServiceProcess {
  readonly output: string[] = [];
  private readonly child: ChildProcess;
  readonly exited: Promise<void>;

  constructor(
    readonly name: string,
    entry: string,
    env: Record<string, string>,
    args: readonly string[] = [],
  ) {
    const argv = entry.endsWith('.js') ? [entry, ...args] : ['--import', 'tsx', entry, ...args];
    this.child = spawn(process.execPath, argv, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Whole lines, however the pipe splits them: a log line is one JSON document.
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      readline.createInterface({ input: stream }).on('line', (line) => line && this.output.push(line));
    }
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    // A crashed test run must not leave services behind holding ports.
    const killOnExit = () => this.child.kill('SIGKILL');
    process.once('exit', killOnExit);
    void this.exited.then(() => process.removeListener('exit', killOnExit));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves once a log line with this `msg` appears; fails at once if the process exits first. */
  waitForLog(message: string, timeoutMs = 90_000): Promise<void> {
    return until(
      () => `${this.name} to log "${message}":\n${this.tail()}`,
      () => {
        if (this.output.some((line) => line.includes(`"msg":"${message}"`))) return true;
        if (!this.running)
          throw new Error(`${this.name} exited before it logged "${message}":\n${this.tail()}`);
        return undefined;
      },
      { timeoutMs },
    ).then(() => undefined);
  }

  /** Resolves once the api at `url` answers /readyz with 200; fails at once if the process exits first. */
  waitForReady(url: string, timeoutMs = 90_000): Promise<void> {
    return until(
      () => `${this.name} to be ready at ${url}:\n${this.tail()}`,
      async () => {
        if (!this.running) throw new Error(`${this.name} exited before it was ready:\n${this.tail()}`);
        const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) }).catch(
          () => undefined,
        );
        return res?.status === 200 ? true : undefined;
      },
      { timeoutMs, intervalMs: 100 },
    ).then(() => undefined);
  }

  /** The last lines it printed, for failure messages. */
  tail(lines = 30): string {
    return this.output.slice(-lines).join('\n');
  }

  /** Lines logged at error level or above (pino levels 50 and 60). */
  errors(): string[] {
    return this.output.filter((line) => /"level":(50|60)/.test(line));
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.running) this.child.kill(signal);
    await this.exited;
  }
}
