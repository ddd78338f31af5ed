import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { allPids, commandLine, isRunning, waitUntilGone } from '../local/infra/proc';
import { freePort } from '../local/infra/ports';
import { reachableDataDir, startEmbeddedPostgres } from '../local/infra/postgres';
import {
  ensureTemporalServerBinaries,
  setupTemporalSchema,
  startTemporalServer,
  TEMPORAL_DATABASES,
  type TemporalPostgres,
} from '../local/infra/temporal-server';
import { loadAdminTemporalConfig } from '../../src/config';
import { devServerSearchAttributes } from '../../src/temporal/search-attribute-registry';
import { benchApiUrl, claimProcessTree, ROOT, stackAnswers } from './stack';
import type { Teardown } from './teardown';

/**
 * `npm run bench -- --temporal=server`: the production Temporal server (the temporalio/server
 * image's binary, built with `go install`) on a PostgreSQL of its own, started before the stack and
 * stopped after it. Everything lives in .data/bench-temporal-server, fresh on every run: the
 * cluster is initialised anew (numHistoryShards is fixed at a cluster's creation).
 */

export type TemporalMode = 'dev' | 'server';

/** `--temporal=dev|server` (also `--temporal server`); the dev server when absent. */
export function temporalModeFromArgs(argv: readonly string[]): TemporalMode {
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    const value = arg.startsWith('--temporal=')
      ? arg.slice('--temporal='.length)
      : arg === '--temporal'
        ? argv[i + 1]
        : undefined;
    if (value === undefined) continue;
    if (value === 'dev' || value === 'server') return value;
    throw new Error(
      `--temporal=${value}: expected --temporal=dev (the CLI dev server, default) or --temporal=server`,
    );
  }
  return 'dev';
}

export const DEV_SERVER_DESCRIPTION = 'Temporal CLI dev server (SQLite file), local';

const RUN_DIR = path.join(ROOT, '.data', 'bench-temporal-server');
const PG_USER = 'postgres';
const PG_PASSWORD = 'password';
export const TEMPORAL_SERVER_ROLE = 'temporal server';
export const TEMPORAL_POSTGRES_ROLE = 'temporal server postgres';

export interface PersistenceCounters {
  /** xact_commit + xact_rollback */
  transactions: number;
  /** pg_stat_statements calls (top-level statements, BEGIN/COMMIT not counted); Temporal's databases only. */
  statements?: number;
  tuplesReturned: number;
  tuplesFetched: number;
  tuplesInserted: number;
  tuplesUpdated: number;
  tuplesDeleted: number;
}

export interface PersistenceSample {
  /** performance.now() when read. */
  atMs: number;
  /** By database: temporal, temporal_visibility, and the service's own (payouts). */
  databases: Record<string, PersistenceCounters>;
}

export interface BenchTemporalServer {
  address: string;
  /** For the report's machine().temporalServer. */
  description: string;
  version: string;
  numHistoryShards: number;
  /** The server process, for CPU sampling (stackProcesses shows it as "temporal server"). */
  pid: number | undefined;
  /** Its PostgreSQL's postmaster ("temporal server postgres" in stackProcesses, backends included). */
  postgresPid: number;
  timings: {
    goBuildSeconds?: number;
    postgresSeconds: number;
    schemaSeconds: number;
    serverStartSeconds: number;
    namespaceSeconds: number;
  };
  /**
   * Counters of the Temporal server's databases and of the service's (serviceDatabaseUrl), to take
   * before and after a phase: persistenceRates() turns two samples into per-second rates.
   */
  persistenceCounters(serviceDatabaseUrl?: string): Promise<PersistenceSample>;
  stop(): Promise<void>;
}

/**
 * Starts the server and its PostgreSQL, registers each with `teardown` as soon as it runs, creates
 * the service's namespace and search attributes, and sets TEMPORAL_ADDRESS (and TEMPORAL_NAMESPACE)
 * in this process's environment, which the stack the bench starts and its own clients then use.
 */
export async function startBenchTemporalServer(
  log: (line: string) => void,
  teardown: Teardown,
): Promise<BenchTemporalServer> {
  const apiUrl = benchApiUrl();
  if (await stackAnswers(apiUrl)) {
    throw new Error(
      `--temporal=server: a stack already answers at ${apiUrl}, and the bench cannot tell which Temporal it uses. ` +
        'Stop it (Ctrl-C in its terminal), or run it yourself against a Temporal server and bench it without --temporal=server.',
    );
  }
  if (process.env.TEMPORAL_ADDRESS) {
    throw new Error(
      `--temporal=server starts a Temporal server of its own, and TEMPORAL_ADDRESS=${process.env.TEMPORAL_ADDRESS} names another: unset one of them`,
    );
  }
  const verbose = Boolean(process.env.BENCH_VERBOSE);
  const numHistoryShards = positiveInt('BENCH_TEMPORAL_SHARDS', 4);
  // The namespace the stack's api and worker will use (TEMPORAL_NAMESPACE, a profile's, or payouts).
  const namespace = loadAdminTemporalConfig(process.env).TEMPORAL_NAMESPACE;

  await stopLeftovers(log);
  const binaries = await ensureTemporalServerBinaries(log);

  // Fresh each run: a cluster from an earlier run may have another shard count, and its workflows
  // would be part of what this run measures.
  let t = performance.now();
  const requestedPgDir = path.join(RUN_DIR, 'postgres');
  const pgDataDir = reachableDataDir(requestedPgDir, verbose ? log : undefined);
  rmSync(pgDataDir, { recursive: true, force: true });
  const pgPort = await freePort();
  const postgres = await startEmbeddedPostgres({
    dataDir: requestedPgDir,
    port: pgPort,
    // Durable, as a production Temporal's PostgreSQL is (persistent: false would turn fsync off).
    persistent: true,
    settings: {
      // Four services, each with its own pools of both stores, and the bench's own sessions.
      max_connections: '200',
      shared_preload_libraries: 'pg_stat_statements',
      'pg_stat_statements.track_utility': 'off',
    },
    log: verbose ? log : undefined,
  });
  teardown.add('Temporal server PostgreSQL', postgres.stop);
  claimProcessTree(postgres.pid, TEMPORAL_POSTGRES_ROLE);
  const postgresSeconds = (performance.now() - t) / 1000;
  const db: TemporalPostgres = { host: '127.0.0.1', port: pgPort, user: PG_USER, password: PG_PASSWORD };
  const adminUrl = `postgres://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${pgPort}/postgres`;
  await withClient(adminUrl, (c) => c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements'));

  t = performance.now();
  await setupTemporalSchema(binaries.sqlTool, db);
  const schemaSeconds = (performance.now() - t) / 1000;

  const server = await startTemporalServer({
    binaries,
    runDir: RUN_DIR,
    postgres: db,
    numHistoryShards,
    namespaces: [
      { name: namespace, searchAttributes: devServerSearchAttributes() },
      // The bench's floor worker and client name no namespace, as the dev server's "default".
      { name: 'default' },
    ],
    log,
    verbose,
    // Not in the terminal's process group: a Ctrl-C reaches the bench, which stops the stack first.
    ownProcessGroup: true,
    onSpawn: (child) => {
      teardown.add('Temporal server', () => child.stop(20_000));
      if (child.pid !== undefined) claimProcessTree(child.pid, TEMPORAL_SERVER_ROLE);
    },
  });
  process.env.TEMPORAL_ADDRESS = server.address;
  process.env.TEMPORAL_NAMESPACE = namespace;

  const timings = {
    ...(binaries.builtInSeconds !== undefined ? { goBuildSeconds: binaries.builtInSeconds } : {}),
    postgresSeconds,
    schemaSeconds,
    serverStartSeconds: server.startSeconds,
    namespaceSeconds: server.namespaceSeconds,
  };
  log(
    `Temporal server v${binaries.version} on ${server.address} (${numHistoryShards} history shards, PostgreSQL on 127.0.0.1:${pgPort}): ` +
      `${timings.goBuildSeconds !== undefined ? `go build ${timings.goBuildSeconds.toFixed(0)} s, ` : ''}` +
      `PostgreSQL ${postgresSeconds.toFixed(1)} s, schema ${schemaSeconds.toFixed(1)} s, ` +
      `server ${server.startSeconds.toFixed(1)} s, namespace ${server.namespaceSeconds.toFixed(1)} s`,
  );

  return {
    address: server.address,
    description: `Temporal server v${binaries.version} (go install), PostgreSQL persistence, ${numHistoryShards} history shards`,
    version: binaries.version,
    numHistoryShards,
    pid: server.pid,
    postgresPid: postgres.pid,
    timings,
    persistenceCounters: (serviceDatabaseUrl) => readCounters(adminUrl, serviceDatabaseUrl),
    stop: async () => {
      await server.stop();
      await postgres.stop();
    },
  };
}

/** Per-second rates between two samples, by database. */
export function persistenceRates(
  before: PersistenceSample,
  after: PersistenceSample,
): Record<string, Partial<Record<keyof PersistenceCounters, number>>> {
  const seconds = (after.atMs - before.atMs) / 1000;
  const rates: Record<string, Partial<Record<keyof PersistenceCounters, number>>> = {};
  for (const [name, b] of Object.entries(after.databases)) {
    const a = before.databases[name];
    if (!a || seconds <= 0) continue;
    const rate: Partial<Record<keyof PersistenceCounters, number>> = {};
    for (const key of Object.keys(b) as (keyof PersistenceCounters)[]) {
      const x = a[key];
      const y = b[key];
      if (x !== undefined && y !== undefined) rate[key] = (y - x) / seconds;
    }
    rates[name] = rate;
  }
  return rates;
}

const STAT_COLUMNS = `datname,
  xact_commit + xact_rollback AS transactions,
  tup_returned, tup_fetched, tup_inserted, tup_updated, tup_deleted`;

/**
 * pg_stat_database is flushed by each backend when it goes idle, at most once a second, so a sample
 * lags by up to a second of a busy backend's work: compare samples at least several seconds apart.
 * pg_stat_statements counts as statements finish.
 */
async function readCounters(adminUrl: string, serviceDatabaseUrl?: string): Promise<PersistenceSample> {
  const atMs = performance.now();
  const databases: Record<string, PersistenceCounters> = {};
  const toCounters = (row: Record<string, string>): PersistenceCounters => ({
    transactions: Number(row.transactions),
    tuplesReturned: Number(row.tup_returned),
    tuplesFetched: Number(row.tup_fetched),
    tuplesInserted: Number(row.tup_inserted),
    tuplesUpdated: Number(row.tup_updated),
    tuplesDeleted: Number(row.tup_deleted),
  });
  await withClient(adminUrl, async (c) => {
    const stats = await c.query<Record<string, string>>(
      `SELECT ${STAT_COLUMNS} FROM pg_stat_database WHERE datname = ANY($1)`,
      [Object.values(TEMPORAL_DATABASES)],
    );
    for (const row of stats.rows) databases[row.datname!] = toCounters(row);
    const statements = await c.query<{ datname: string; calls: string }>(
      `SELECT d.datname, sum(s.calls) AS calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
       WHERE d.datname = ANY($1) GROUP BY d.datname`,
      [Object.values(TEMPORAL_DATABASES)],
    );
    for (const row of statements.rows) {
      if (databases[row.datname]) databases[row.datname]!.statements = Number(row.calls);
    }
  });
  if (serviceDatabaseUrl) {
    await withClient(serviceDatabaseUrl, async (c) => {
      const stats = await c.query<Record<string, string>>(
        `SELECT ${STAT_COLUMNS} FROM pg_stat_database WHERE datname = current_database()`,
      );
      const row = stats.rows[0];
      if (row) databases[`${row.datname} (service)`] = toCounters(row);
    });
  }
  return { atMs, databases };
}

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * What an earlier bench killed without a chance to stop (SIGKILL) left running: a server whose
 * configuration is in our run folder, a postmaster whose postmaster.pid is in our cluster. Both go
 * before the folder is reused.
 */
async function stopLeftovers(log: (line: string) => void): Promise<void> {
  const found: { what: string; pid: number; signal: NodeJS.Signals }[] = [];
  for (const pid of allPids()) {
    const argv = commandLine(pid);
    if (
      pid !== process.pid &&
      argv &&
      path.basename(argv[0] ?? '') === 'temporal-server' &&
      argv.includes(RUN_DIR)
    ) {
      found.push({ what: 'Temporal server', pid, signal: 'SIGTERM' });
    }
  }
  try {
    const pgDir = reachableDataDir(path.join(RUN_DIR, 'postgres'));
    const pid = Number(readFileSync(path.join(pgDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const argv = Number.isInteger(pid) && pid > 0 ? commandLine(pid) : undefined;
    if (argv && path.basename(argv[0] ?? '') === 'postgres' && argv.includes(pgDir)) {
      found.push({ what: 'Temporal server PostgreSQL', pid, signal: 'SIGINT' });
    }
  } catch {
    // No cluster, or none running.
  }
  for (const { what, pid, signal } of found) {
    if (!isRunning(pid)) continue;
    process.kill(pid, signal);
    if (!(await waitUntilGone(pid, 20_000))) process.kill(pid, 'SIGKILL');
    log(`stopped the ${what} (pid ${pid}) an earlier bench left running`);
  }
}

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name}=${raw} is not a positive integer`);
  return value;
}
