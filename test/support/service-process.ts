import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/**
 * A service entry point (`src/worker.ts`, `src/main/api.ts`) as its own OS process, started the
 * way it is deployed (node with tsx's loader, no wrapper process in between, so a SIGKILL hits the
 * service itself). Its JSON log lines are kept for waiting on events and for error messages.
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
    this.child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => this.output.push(...chunk.split('\n').filter(Boolean)));
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
  async waitForLog(message: string, timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.output.some((line) => line.includes(`"msg":"${message}"`))) return;
      if (!this.running) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${this.name} never logged "${message}":\n${this.tail()}`);
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
