import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { isListening } from './ports';
import { describeExit, spawnManaged, type ExitStatus, type ManagedProcess } from './processes';
import { resolveTemporalCliPath } from './temporal-binaries';
import { devServerDynamicConfigArgs } from './temporal-dynamic-config';

// The Temporal CLI dev server (`temporal server start-dev`) as a child process: the local stand-in for
// a Temporal cluster. Production points TEMPORAL_ADDRESS at a real cluster instead.

export type { SearchAttributeTypeName } from '../../../src/temporal/search-attribute-registry';
import type { SearchAttributeTypeName } from '../../../src/temporal/search-attribute-registry';

export interface TemporalDevServerOptions {
  /** gRPC frontend port on 127.0.0.1. */
  port: number;
  /** Web UI port; without it the server runs headless. */
  uiPort?: number;
  /** SQLite file that keeps workflows across restarts; without it state lives in memory only. */
  dbFile?: string;
  /** Created at start-up, in addition to "default". */
  namespace?: string;
  /** Registered at start-up (before the frontend answers), so workflows can use them at once. */
  searchAttributes?: Record<string, SearchAttributeTypeName>;
  /** Further `start-dev` flags, e.g. `--dynamic-config-value` pairs. */
  extraArgs?: readonly string[];
  log?: (line: string) => void;
  /** See ManagedProcessOptions.ownProcessGroup. */
  ownProcessGroup?: boolean;
}

export interface TemporalDevServerHandle {
  /** host:port for Connection / NativeConnection. */
  address: string;
  uiUrl?: string;
  pid: number | undefined;
  /** Settles when the server is gone, however it went. */
  exited: Promise<ExitStatus>;
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';
// A cold start opens (and on first use migrates) the SQLite file; on two busy cores that can take
// several seconds, so the limit is generous. It only matters when something is really wrong.
const READY_TIMEOUT_MS = 60_000;
const POLL_INTERVAL_MS = 100;
// SIGTERM makes the server flush SQLite and close cleanly; SIGKILL is the fallback for a hang.
const STOP_TIMEOUT_MS = 10_000;
/**
 * The SQLite file in write-ahead-log mode, every commit still synced (docs/decisions.md D83). SQLite's
 * default rollback journal costs several syncs per commit, and the server does everything on one
 * SQLite connection: it spent POST bursts waiting on the disk. `synchronous=full` keeps each commit
 * durable through a power loss, as before; a killed server's log is replayed on the next open.
 */
const SQLITE_PRAGMAS = ['--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=full'];

export async function startTemporalDevServer(
  opts: TemporalDevServerOptions,
): Promise<TemporalDevServerHandle> {
  const cli = resolveTemporalCliPath();
  if (!cli) {
    throw new Error(
      'Temporal CLI not found: run `npm run provision` (builds .tools/bin/temporal) or set TEMPORAL_CLI_PATH',
    );
  }
  // Our readiness probe would happily talk to whatever already listens there; refuse instead of
  // silently sharing another server (and its workflows).
  for (const port of [opts.port, opts.uiPort]) {
    if (port !== undefined && (await isListening(HOST, port))) {
      throw new Error(`Temporal dev server: port ${port} on ${HOST} is already in use`);
    }
  }

  const namespace = opts.namespace ?? 'default';
  const args = ['server', 'start-dev', '--ip', HOST, '--port', String(opts.port)];
  args.push(...(opts.uiPort !== undefined ? ['--ui-port', String(opts.uiPort)] : ['--headless']));
  if (opts.dbFile) {
    mkdirSync(path.dirname(opts.dbFile), { recursive: true });
    args.push('--db-filename', opts.dbFile, ...SQLITE_PRAGMAS);
  }
  args.push('--namespace', namespace, '--log-level', 'warn', ...devServerDynamicConfigArgs());
  for (const [name, type] of Object.entries(opts.searchAttributes ?? {})) {
    args.push('--search-attribute', `${name}=${type}`);
  }
  args.push(...(opts.extraArgs ?? []));

  const address = `${HOST}:${opts.port}`;
  // Its shutdown logs WARN/ERROR lines about cancelled polls, which are expected and alarm readers.
  const server = spawnManaged({
    name: 'temporal',
    command: cli,
    args,
    log: opts.log,
    quietStop: true,
    ownProcessGroup: opts.ownProcessGroup ?? false,
  });
  try {
    await waitUntilServing(server, opts.port, namespace);
  } catch (err) {
    await server.stop(STOP_TIMEOUT_MS);
    throw err;
  }
  const uiUrl = opts.uiPort !== undefined ? `http://${HOST}:${opts.uiPort}` : undefined;
  opts.log?.(`[temporal] dev server ready on ${address}${uiUrl ? `, UI ${uiUrl}` : ''}`);
  return {
    address,
    ...(uiUrl ? { uiUrl } : {}),
    pid: server.pid,
    exited: server.exited,
    stop: () => server.stop(STOP_TIMEOUT_MS),
  };
}

/** Listening is not enough: the frontend answers only once the namespace is registered. */
async function waitUntilServing(server: ManagedProcess, port: number, namespace: string): Promise<void> {
  const address = `${HOST}:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastError: unknown;
  for (;;) {
    if (server.hasExited()) {
      const status = await server.exited;
      throw new Error(
        `Temporal dev server ${describeExit(status)} before it was ready:\n${server.recentOutput() || '(no output)'}`,
      );
    }
    if (await isListening(HOST, port)) {
      try {
        await describeNamespace(address, namespace);
        return;
      } catch (err) {
        lastError = err;
      }
    }
    if (Date.now() > deadline) {
      const why = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`Temporal dev server did not serve ${address} within ${READY_TIMEOUT_MS} ms${why}`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
}

async function describeNamespace(address: string, namespace: string): Promise<void> {
  const connection = await Connection.connect({ address, connectTimeout: 2_000 });
  try {
    await connection.workflowService.describeNamespace({ namespace });
  } finally {
    await connection.close();
  }
}
