import { execFile, spawn } from 'node:child_process';
import {
  accessSync,
  constants,
  createWriteStream,
  existsSync,
  mkdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { freePort, isListening } from './ports';
import { describeExit, spawnManaged, type ExitStatus, type ManagedProcess } from './processes';
import { repoRoot, resolveTemporalCliPath } from './temporal-binaries';
import { temporalDynamicConfigFile } from './temporal-dynamic-config';
import type { SearchAttributeTypeName } from '../../../src/temporal/search-attribute-registry';

// The production Temporal server (`temporal-server start`, the binary of the temporalio/server
// image) with PostgreSQL persistence, as a child process: what the bench runs with
// `--temporal=server` instead of the CLI dev server. Built on demand from the Go module proxy (the
// image's registry is not reachable from our machines), never by `npm start` or the tests.

/** The version of the temporalio/server image docker-compose.yml runs. */
export const TEMPORAL_SERVER_VERSION = '1.29.1';

const execFileAsync = promisify(execFile);
const HOST = '127.0.0.1';

export interface TemporalServerBinaries {
  version: string;
  /** `temporal-server` (go.temporal.io/server/cmd/server). */
  server: string;
  /** `temporal-sql-tool` (go.temporal.io/server/cmd/tools/sql). */
  sqlTool: string;
  /** Seconds the `go install` took, when this call built them. */
  builtInSeconds?: number;
}

/**
 * .tools/temporal-server-<version>/bin/{temporal-server,temporal-sql-tool}, built with `go install`
 * when missing: about 4 CPU-minutes with a cold Go build cache (7 minutes on two busy cores), under
 * a minute when the cache has the server's packages, seconds when present. Idempotent: binaries that
 * answer with the version are kept; a build goes to a staging folder and is moved in at the end, so
 * an interrupted one leaves nothing half-done.
 */
export async function ensureTemporalServerBinaries(
  log: (line: string) => void,
  version = TEMPORAL_SERVER_VERSION,
): Promise<TemporalServerBinaries> {
  const home = path.join(repoRoot(), '.tools', `temporal-server-${version}`);
  const bin = path.join(home, 'bin');
  const server = path.join(bin, 'temporal-server');
  const sqlTool = path.join(bin, 'temporal-sql-tool');
  if ((await reportsVersion(server, version)) && (await reportsVersion(sqlTool, version))) {
    return { version, server, sqlTool };
  }
  try {
    await execFileAsync('go', ['version']);
  } catch {
    throw new Error(
      `the Temporal server is built with Go ('go install go.temporal.io/server/cmd/server@v${version}'), and 'go' is not on PATH`,
    );
  }
  const staging = path.join(home, `bin.staging.${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const logFile = path.join(home, 'go-install.log');
  log(
    `building Temporal server v${version} with 'go install' (minutes with a cold Go build cache); log: ${logFile}`,
  );
  const started = Date.now();
  const args = [
    'install',
    '-trimpath',
    '-ldflags',
    '-s -w',
    `go.temporal.io/server/cmd/server@v${version}`,
    `go.temporal.io/server/cmd/tools/sql@v${version}`,
  ];
  const status = await new Promise<number | null>((resolve, reject) => {
    const out = createWriteStream(logFile);
    const child = spawn('go', args, {
      env: { ...process.env, GOBIN: staging },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.pipe(out);
    child.stderr.pipe(out);
    const heartbeat = setInterval(
      () => log(`  ... go install still running (${Math.round((Date.now() - started) / 1000)} s)`),
      20_000,
    );
    child.once('error', reject);
    child.once('close', (code) => {
      clearInterval(heartbeat);
      out.end();
      resolve(code);
    });
  });
  if (status !== 0) {
    rmSync(staging, { recursive: true, force: true });
    throw new Error(`go install of Temporal server v${version} failed (exit ${status}); see ${logFile}`);
  }
  mkdirSync(bin, { recursive: true });
  renameSync(path.join(staging, 'server'), server);
  renameSync(path.join(staging, 'sql'), sqlTool);
  rmSync(staging, { recursive: true, force: true });
  if (!(await reportsVersion(server, version))) {
    throw new Error(`built ${server}, but it does not report version ${version}`);
  }
  const builtInSeconds = (Date.now() - started) / 1000;
  log(`built Temporal server v${version} in ${builtInSeconds.toFixed(0)} s: ${bin}`);
  return { version, server, sqlTool, builtInSeconds };
}

async function reportsVersion(binary: string, version: string): Promise<boolean> {
  try {
    accessSync(binary, constants.X_OK);
    const { stdout } = await execFileAsync(binary, ['--version']);
    return new RegExp(`version ${version.replace(/\./g, '\\.')}\\b`).test(stdout);
  } catch {
    return false;
  }
}

export interface TemporalPostgres {
  host: string;
  port: number;
  user: string;
  password: string;
}

/** The two databases the server uses: its own and the visibility store. */
export const TEMPORAL_DATABASES = { default: 'temporal', visibility: 'temporal_visibility' } as const;

/**
 * Creates both databases and brings their schemas to the version the binaries carry, as the
 * temporal-schema job of docker-compose.yml does: create-database, setup-schema -v 0.0 (the version
 * table), update-schema. The versioned schema is the one embedded in temporal-sql-tool
 * (postgresql/v12/...), the same files as the module's schema/ folder. Idempotent: an existing
 * database is kept and update-schema applies only what is missing.
 */
export async function setupTemporalSchema(sqlTool: string, db: TemporalPostgres): Promise<void> {
  const common = [
    '--plugin',
    'postgres12',
    '--endpoint',
    db.host,
    '--port',
    String(db.port),
    '--user',
    db.user,
    '--password',
    db.password,
  ];
  // SQL_* variables would fill flags we leave out; everything is given, but start from a clean slate.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SQL_')));
  const run = async (database: string, ...command: string[]) => {
    try {
      await execFileAsync(sqlTool, [...common, '--database', database, ...command], { env });
    } catch (err) {
      const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
      const output = `${stdout}${stderr}`;
      if (command[0] === 'create-database' && /already exists/i.test(output)) return;
      throw new Error(
        `temporal-sql-tool --database ${database} ${command.join(' ')} failed:\n${output.trim()}`,
      );
    }
  };
  for (const [kind, database] of Object.entries(TEMPORAL_DATABASES)) {
    const schema = kind === 'default' ? 'postgresql/v12/temporal' : 'postgresql/v12/visibility';
    await run(database, 'create-database', '--defaultdb', 'postgres');
    await run(database, 'setup-schema', '-v', '0.0');
    await run(database, 'update-schema', '--schema-name', schema);
  }
}

export interface TemporalServerPorts {
  frontend: number;
  frontendHttp: number;
  frontendMembership: number;
  history: number;
  historyMembership: number;
  matching: number;
  matchingMembership: number;
  worker: number;
  workerMembership: number;
}

export async function freeTemporalServerPorts(): Promise<TemporalServerPorts> {
  const ports = new Set<number>();
  while (ports.size < 9) ports.add(await freePort());
  const [
    frontend,
    frontendHttp,
    frontendMembership,
    history,
    historyMembership,
    matching,
    matchingMembership,
    worker,
    workerMembership,
  ] = [...ports] as [number, number, number, number, number, number, number, number, number];
  return {
    frontend,
    frontendHttp,
    frontendMembership,
    history,
    historyMembership,
    matching,
    matchingMembership,
    worker,
    workerMembership,
  };
}

export interface TemporalServerConfigOptions {
  ports: TemporalServerPorts;
  postgres: TemporalPostgres;
  numHistoryShards: number;
  dynamicConfigFile: string;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Connection pool size of each service's default store (four services share the cluster). */
  maxConns?: number;
  /** Connection pool size of each service's visibility store. */
  visibilityMaxConns?: number;
}

/**
 * The server's configuration, in the shape of the module's config/development-postgres12.yaml: both
 * stores on the postgres12 plugin, every service on its own loopback port, no archival, no pprof,
 * no metrics listener (the bench samples CPU and PostgreSQL's own counters instead).
 */
export function temporalServerConfig(opts: TemporalServerConfigOptions): Record<string, unknown> {
  const { ports, postgres } = opts;
  const store = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${postgres.host}:${postgres.port}`,
      connectProtocol: 'tcp',
      user: postgres.user,
      password: postgres.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const service = (grpcPort: number, membershipPort: number, httpPort?: number) => ({
    rpc: { grpcPort, membershipPort, bindOnLocalHost: true, ...(httpPort ? { httpPort } : {}) },
  });
  return {
    log: { stdout: true, level: opts.logLevel ?? 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: opts.numHistoryShards,
      datastores: {
        'postgres-default': store(TEMPORAL_DATABASES.default, opts.maxConns ?? 20),
        'postgres-visibility': store(TEMPORAL_DATABASES.visibility, opts.visibilityMaxConns ?? 10),
      },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: HOST },
    },
    services: {
      frontend: service(ports.frontend, ports.frontendMembership, ports.frontendHttp),
      history: service(ports.history, ports.historyMembership),
      matching: service(ports.matching, ports.matchingMembership),
      worker: service(ports.worker, ports.workerMembership),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: `${HOST}:${ports.frontend}`,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: opts.dynamicConfigFile, pollInterval: '10s' },
  };
}

export interface TemporalServerOptions {
  binaries: TemporalServerBinaries;
  /** Holds the generated configuration and the server's log; created if missing. */
  runDir: string;
  postgres: TemporalPostgres;
  numHistoryShards: number;
  /**
   * Created once the frontend answers, each with its search attributes. Unlike the dev server, the
   * production server has no "default" namespace of its own: name it here if a client needs it.
   */
  namespaces: { name: string; searchAttributes?: Record<string, SearchAttributeTypeName> }[];
  log: (line: string) => void;
  /** Also forward the server's own output to log (it always goes to <runDir>/temporal-server.log). */
  verbose?: boolean;
  /** See ManagedProcessOptions.ownProcessGroup. */
  ownProcessGroup?: boolean;
  /** Called as soon as the process runs, before it is ready: a caller's cleanup must know it at once. */
  onSpawn?: (server: ManagedProcess) => void;
}

export interface TemporalServerHandle {
  /** host:port of the frontend, for Connection / NativeConnection / TEMPORAL_ADDRESS. */
  address: string;
  pid: number | undefined;
  ports: TemporalServerPorts;
  /** Seconds from spawn until the frontend answered, and for the namespace setup after it. */
  startSeconds: number;
  namespaceSeconds: number;
  exited: Promise<ExitStatus>;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 120_000;
// SIGTERM makes it leave the membership ring and stop its services in order; on two busy cores that
// takes a few seconds.
const STOP_TIMEOUT_MS = 20_000;
// system.namespaceCacheRefreshInterval (2 s by default): how soon history and matching see the
// namespace's new search attribute aliases, which the frontend reads from the database directly.
const NAMESPACE_REFRESH_MS = 2_000;

export async function startTemporalServer(opts: TemporalServerOptions): Promise<TemporalServerHandle> {
  const cli = resolveTemporalCliPath();
  if (!cli) {
    throw new Error(
      'Temporal CLI not found: run `npm run provision` (builds .tools/bin/temporal) or set TEMPORAL_CLI_PATH',
    );
  }
  const configDir = path.join(opts.runDir, 'config');
  mkdirSync(configDir, { recursive: true });
  const ports = await freeTemporalServerPorts();
  // The project's one dynamic config, as docker-compose.yml's server reads it.
  const dynamicConfigFile = temporalDynamicConfigFile();
  const env = 'bench';
  writeFileSync(
    path.join(configDir, `${env}.yaml`),
    `# Generated by dev/local/infra/temporal-server.ts for one run; rewritten on the next.\n${stringify(
      temporalServerConfig({
        ports,
        postgres: opts.postgres,
        numHistoryShards: opts.numHistoryShards,
        dynamicConfigFile,
      }),
    )}`,
  );

  const address = `${HOST}:${ports.frontend}`;
  const logFile = path.join(opts.runDir, 'temporal-server.log');
  const logStream = createWriteStream(logFile, { flags: 'w' });
  const started = performance.now();
  // Its shutdown logs errors about cancelled polls and closed connections, which alarm readers.
  const server = spawnManaged({
    name: 'temporal-server',
    command: opts.binaries.server,
    // The config folder is found as <root>/<config>/<env>.yaml; templating is not enabled in it.
    args: ['--root', opts.runDir, '--config', 'config', '--env', env, '--allow-no-auth', 'start'],
    cwd: repoRoot(),
    log: (line) => {
      logStream.write(`${line.replace(/^\[temporal-server\] /, '')}\n`);
      if (opts.verbose) opts.log(line);
    },
    quietStop: true,
    ownProcessGroup: opts.ownProcessGroup ?? false,
  });
  void server.exited.then(() => logStream.end());
  opts.onSpawn?.(server);
  const fail = async (err: unknown): Promise<never> => {
    await server.stop(STOP_TIMEOUT_MS);
    throw err instanceof Error ? err : new Error(String(err));
  };

  // This server and nothing else: no profile, no TEMPORAL_* variables (an API key or TLS setting
  // meant for another cluster), no colours in what we parse.
  const cliEnv = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('TEMPORAL_')),
  );
  const cliFlags = [
    '--address',
    address,
    '--disable-config-file',
    '--disable-config-env',
    '--tls=false',
    '--color',
    'never',
  ];
  const temporal = (...args: string[]) =>
    execFileAsync(cli, [...args, ...cliFlags], { timeout: 15_000, env: cliEnv }).then(({ stdout }) => stdout);
  const until = async (what: string, check: () => Promise<boolean>): Promise<void> => {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let lastError: unknown;
    for (;;) {
      if (server.hasExited()) {
        const status = await server.exited;
        throw new Error(
          `Temporal server ${describeExit(status)} before ${what}:\n${server.recentOutput() || '(no output)'}\n(log: ${logFile})`,
        );
      }
      try {
        if (await check()) return;
      } catch (err) {
        lastError = err;
      }
      if (Date.now() > deadline) {
        const why =
          lastError instanceof Error ? `: ${lastError.message.trim().split('\n').slice(-3).join(' ')}` : '';
        throw new Error(
          `Temporal server: no ${what} within ${READY_TIMEOUT_MS / 1000} s${why} (log: ${logFile})`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };

  let startSeconds = 0;
  let namespaceSeconds = 0;
  try {
    await until(
      'frontend on ' + address,
      async () =>
        (await isListening(HOST, ports.frontend)) &&
        /SERVING/.test(await temporal('operator', 'cluster', 'health')),
    );
    startSeconds = (performance.now() - started) / 1000;
    const namespaceStarted = performance.now();
    for (const { name: namespace, searchAttributes } of opts.namespaces) {
      // As docker-compose.yml's temporal-setup job does; each step retried until it holds, since the
      // frontend answers before its namespace handlers can write.
      await until(`namespace ${namespace}`, async () => {
        try {
          await temporal('operator', 'namespace', 'describe', '--namespace', namespace);
          return true;
        } catch {
          await temporal(
            'operator',
            'namespace',
            'create',
            '--namespace',
            namespace,
            '--retention',
            '30d',
          ).catch((err: { stderr?: string }) => {
            if (!/already exists/i.test(err.stderr ?? '')) throw err;
          });
          return false;
        }
      });
      const wanted = Object.entries(searchAttributes ?? {});
      if (wanted.length === 0) continue;
      await until(`search attributes ${wanted.map(([name]) => name).join(', ')}`, async () => {
        const listed = JSON.parse(
          await temporal(
            'operator',
            'search-attribute',
            'list',
            '--namespace',
            namespace,
            '--output',
            'json',
          ),
        ) as { customAttributes?: Record<string, unknown> };
        const missing = wanted.filter(([name]) => !(name in (listed.customAttributes ?? {})));
        for (const [name, type] of missing) {
          await temporal(
            'operator',
            'search-attribute',
            'create',
            '--namespace',
            namespace,
            '--name',
            name,
            '--type',
            type,
          );
        }
        return missing.length === 0;
      });
    }
    // The frontend listed them from the database; the other services' namespace caches follow.
    await new Promise((resolve) => setTimeout(resolve, 2 * NAMESPACE_REFRESH_MS + 500));
    namespaceSeconds = (performance.now() - namespaceStarted) / 1000;
  } catch (err) {
    return fail(err);
  }
  return {
    address,
    pid: server.pid,
    ports,
    startSeconds,
    namespaceSeconds,
    exited: server.exited,
    stop: () => server.stop(STOP_TIMEOUT_MS),
  };
}

/** Removes a run folder's generated files (not the binaries). */
export function clearRunDir(runDir: string): void {
  if (existsSync(runDir)) rmSync(path.join(runDir, 'config'), { recursive: true, force: true });
}
