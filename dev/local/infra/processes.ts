import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all (e.g. ENOENT). */
  error?: Error;
}

export interface ManagedProcessOptions {
  /** Short name used as the log prefix and in error messages. */
  name: string;
  command: string;
  args: readonly string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Receives each output line (stdout and stderr) prefixed with `[name] `. */
  log?: (line: string) => void;
  /**
   * Stop forwarding output to `log` once stop() is called, for servers whose shutdown chatter reads
   * like failures. It is still kept for recentOutput().
   */
  quietStop?: boolean;
  /**
   * Start it in a process group of its own, so signals meant for the caller's group (a Ctrl-C, a
   * closed terminal's SIGHUP) reach only the caller, which then stops it in its own order.
   */
  ownProcessGroup?: boolean;
  /**
   * Open an IPC channel: a node child can watch it close and stop itself when the caller dies
   * without a chance to stop it (SIGKILL), see dev/local/exit-with-launcher.ts.
   */
  ipc?: boolean;
}

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number | undefined;
  /** Settles once the process is gone, however it went. Never rejects. */
  readonly exited: Promise<ExitStatus>;
  hasExited(): boolean;
  /** The last lines the process printed, for error messages. */
  recentOutput(): string;
  /** SIGTERM, then SIGKILL if it is still there after `timeoutMs`. Idempotent. */
  stop(timeoutMs?: number): Promise<void>;
}

const RECENT_LINES = 40;
const DEFAULT_STOP_TIMEOUT_MS = 10_000;

// One process-wide 'exit' hook instead of one per child: a crashed test run or launcher must not leave
// servers holding ports, and per-child listeners would trip Node's max-listeners warning.
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function killLiveChildrenOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

export function spawnManaged(opts: ManagedProcessOptions): ManagedProcess {
  const child = spawn(opts.command, opts.args, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: opts.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
    detached: opts.ownProcessGroup ?? false,
  });
  live.add(child);
  killLiveChildrenOnExit();

  const recent: string[] = [];
  let stopRequested = false;
  const onLine = (line: string) => {
    if (!line.trim()) return;
    recent.push(line);
    if (recent.length > RECENT_LINES) recent.shift();
    if (!(stopRequested && opts.quietStop)) opts.log?.(`[${opts.name}] ${line}`);
  };
  for (const stream of [child.stdout, child.stderr]) {
    if (stream) readline.createInterface({ input: stream, crlfDelay: Infinity }).on('line', onLine);
  }

  let status: ExitStatus | undefined;
  const exited = new Promise<ExitStatus>((resolve) => {
    const settle = (s: ExitStatus) => {
      if (status) return;
      status = s;
      live.delete(child);
      resolve(s);
    };
    child.once('exit', (code, signal) => settle({ code, signal }));
    child.once('error', (error) => {
      // 'error' also fires for a failed kill(); only a process that never started is finished here.
      if (child.pid === undefined) settle({ code: null, signal: null, error });
    });
  });

  let stopping: Promise<void> | undefined;
  const stop = (timeoutMs = DEFAULT_STOP_TIMEOUT_MS): Promise<void> => {
    stopping ??= (async () => {
      stopRequested = true;
      if (status) return;
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs);
      });
      if ((await Promise.race([exited, timedOut])) === 'timeout') {
        opts.log?.(`[${opts.name}] did not stop within ${timeoutMs} ms of SIGTERM; sending SIGKILL`);
        child.kill('SIGKILL');
        await exited;
      }
      clearTimeout(timer);
    })();
    return stopping;
  };

  return {
    name: opts.name,
    pid: child.pid,
    exited,
    hasExited: () => status !== undefined,
    recentOutput: () => recent.join('\n'),
    stop,
  };
}

/** Human-readable reason for an exit, for error messages. */
export function describeExit(status: ExitStatus): string {
  if (status.error) return `could not start: ${status.error.message}`;
  return status.signal ? `killed by ${status.signal}` : `exited with code ${status.code}`;
}
