import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import path from 'node:path';
import { anvilAccount } from '../local/infra/anvil';
import { spawnManaged, type ManagedProcess } from '../local/infra/processes';
import { repoRoot } from '../local/infra/temporal-binaries';
import { fromSource, SERVICE_ENTRIES, serviceEnv } from '../local/stack-env';
import { stackSettings } from '../local/stack-settings';
import type { Teardown } from './teardown';

/**
 * The local stack the bench measures: the one `npm start` brings up, started here (with the bench's
 * configuration) when nothing answers on the api port yet. Extra api and worker replicas for the
 * scale-out phase get the same settings the launcher gives its own.
 */

export const ROOT = repoRoot();
const SETTINGS = stackSettings(ROOT);
/** The stack's data: the running stack's (.data), or the bench's own when it starts the stack itself. */
let DATA = SETTINGS.dataDir;

export interface Stack {
  apiUrl: string;
  sandboxUrl: string;
  workerMetricsUrl: string;
  apiKey: string;
  /** True when the bench started it (and so stops it at the end). */
  owned: boolean;
  stop(): Promise<void>;
}

/** The api the bench loads: BENCH_API_URL, else the launcher's default port. */
export function benchApiUrl(): string {
  return process.env.BENCH_API_URL ?? 'http://127.0.0.1:3000';
}

/** Whether a stack's api answers its readiness check at apiUrl. */
export function stackAnswers(apiUrl: string): Promise<boolean> {
  return isReady(`${apiUrl}/readyz`);
}

async function isReady(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return res.ok;
  } catch {
    return false;
  }
}

/**
 * The bench's settings for the service, all ordinary configuration: rate limits (partner and webhook)
 * high enough that a closed loop of 64 clients never meets them, and the worker's sticky cache sized for the
 * open-payout phase. Anything already set in the environment wins.
 */
export function benchServiceEnv(): NodeJS.ProcessEnv {
  return {
    POST_RATE_LIMIT_PER_MINUTE: '10000000',
    READ_RATE_LIMIT_PER_MINUTE: '10000000',
    // Two provider webhooks a payout, all from the sandbox's one address: at the default (600 new
    // tokens a minute) the provider's retries, not the service, would set the pace.
    WEBHOOK_RATE_LIMIT_PER_MINUTE: '10000000',
    // A run leaves a few thousand payouts open (POST answers before the worker, D81, so the POST
    // figures create more): cached as the floor worker's are (10,000), a live GET is a query of a
    // cached workflow, as the query floor's, not a replay of an evicted one.
    WORKER_MAX_CACHED_WORKFLOWS: '10000',
    LOG_LEVEL: 'warn',
    ...process.env,
  };
}

export interface EnsureStackOptions {
  /** Refuse a stack that already answers, with this reason (it was not started with our settings). */
  refuseRunning?: string;
  /** Gets the launcher's stop as soon as it runs, so a signal during its start-up stops it. */
  teardown?: Teardown;
}

export async function ensureStack(
  log: (line: string) => void,
  opts: EnsureStackOptions = {},
): Promise<Stack> {
  const apiUrl = benchApiUrl();
  const sandboxUrl = process.env.BENCH_SANDBOX_URL ?? 'http://127.0.0.1:4000';
  const workerMetricsUrl = process.env.BENCH_WORKER_METRICS_URL ?? 'http://127.0.0.1:9465/metrics';
  let launcher: ManagedProcess | undefined;
  if (!(await isReady(`${apiUrl}/readyz`))) {
    // A data folder of its own, fresh each run: the thousands of payouts a run leaves PENDING must not
    // expire (FAILED, with callbacks) in the stack a developer starts next with `npm start`.
    if (!process.env.LOCAL_DATA_DIR) {
      DATA = path.join(SETTINGS.dataDir, 'bench-stack');
      rmSync(DATA, { recursive: true, force: true });
    }
    log(
      `no stack on the api port: starting \`npm start\` (dev/local/start.ts) with the bench settings, data in ${path.relative(ROOT, DATA)}`,
    );
    launcher = spawnManaged({
      name: 'stack',
      command: process.execPath,
      args: fromSource('dev/local/start.ts'),
      cwd: ROOT,
      env: { ...benchServiceEnv(), LOCAL_DATA_DIR: DATA },
      log: process.env.BENCH_VERBOSE ? log : undefined,
      quietStop: true,
    });
    const started = launcher;
    opts.teardown?.add('stack', () => started.stop(60_000));
    const deadline = Date.now() + 180_000;
    while (!(await isReady(`${apiUrl}/readyz`))) {
      if (launcher.hasExited() || Date.now() > deadline) {
        throw new Error(`the stack did not come up:\n${launcher.recentOutput()}`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  } else if (opts.refuseRunning) {
    throw new Error(`a stack already answers at ${apiUrl}: ${opts.refuseRunning}`);
  } else {
    log(`using the stack already running at ${apiUrl} (it must run with raised rate limits, see README)`);
  }
  const apiKey = process.env.BENCH_API_KEY ?? demoApiKey();
  return {
    apiUrl,
    sandboxUrl,
    workerMetricsUrl,
    apiKey,
    owned: launcher !== undefined,
    stop: async () => {
      await launcher?.stop(60_000);
    },
  };
}

function demoApiKey(): string {
  const file = path.join(DATA, 'demo-partner.json');
  if (!existsSync(file))
    throw new Error(`no ${file}: start the stack once with npm start, or set BENCH_API_KEY`);
  return (JSON.parse(readFileSync(file, 'utf8')) as { api_key: string }).api_key;
}

/**
 * The environment the launcher gives its api and worker: its servers where it starts them (or the
 * outside ones the environment names, as the launcher uses them), its keys from its state in .data.
 */
export function replicaEnv(): NodeJS.ProcessEnv {
  const chain = JSON.parse(readFileSync(path.join(DATA, 'local-chain.json'), 'utf8')) as {
    usdtAddress: string;
    sanctionsOracleAddress?: string;
    brlUsdFeedAddress?: string;
    usdtUsdFeedAddress?: string;
  };
  const env = process.env;
  return {
    ...benchServiceEnv(),
    ...serviceEnv({
      databaseUrl:
        env.DATABASE_URL ?? `postgres://postgres:password@127.0.0.1:${SETTINGS.postgresPort}/payouts`,
      temporal: { address: env.TEMPORAL_ADDRESS ?? `127.0.0.1:${SETTINGS.temporalPort}` },
      providerUrl: env.PROVIDER_API_URL ?? `http://127.0.0.1:${SETTINGS.sandboxPort}`,
      chain: {
        rpcUrl: env.EVM_RPC_URL ?? `http://127.0.0.1:${SETTINGS.anvilPort}`,
        usdtAddress: env.USDT_CONTRACT_ADDRESS ?? chain.usdtAddress,
        sanctionsOracleAddress: env.SANCTIONS_ORACLE_ADDRESS ?? chain.sanctionsOracleAddress,
        // The launcher's feeds, so a replica in treasury mode quotes as the launcher's api does.
        brlUsdFeedAddress: env.PRICE_FEED_BRL_USD_ADDRESS ?? chain.brlUsdFeedAddress,
        usdtUsdFeedAddress: env.PRICE_FEED_USDT_USD_ADDRESS ?? chain.usdtUsdFeedAddress,
      },
      treasuryKey: env.TREASURY_PRIVATE_KEY ?? anvilAccount('treasury').privateKey,
      payloadKey:
        env.PAYLOAD_ENCRYPTION_KEY ?? readFileSync(path.join(DATA, 'payload-encryption-key'), 'utf8').trim(),
    }),
  };
}

/** One more api (own ports) or worker process of the service, against the same servers. */
export function startReplica(
  kind: 'api' | 'worker',
  index: number,
  extraEnv: NodeJS.ProcessEnv = {},
): ManagedProcess {
  const env: NodeJS.ProcessEnv = { ...replicaEnv(), ...extraEnv };
  if (kind === 'api') {
    env.PORT = String(3000 + index);
    env.METRICS_PORT = String(9470 + index);
  } else {
    env.WORKER_METRICS_PORT = String(9480 + index);
  }
  return spawnManaged({
    name: `${kind}-${index}`,
    command: process.execPath,
    args: fromSource(SERVICE_ENTRIES[kind]),
    cwd: ROOT,
    env,
  });
}

export async function waitReady(url: string, child: ManagedProcess, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await isReady(url))) {
    if (child.hasExited() || Date.now() > deadline) {
      throw new Error(`${child.name} did not become ready:\n${child.recentOutput()}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** A Prometheus text exposition's samples whose name (and optional label text) match. */
export async function scrapeMetric(url: string, name: string, labelFilter = ''): Promise<number | undefined> {
  try {
    return metricSum(
      await (await fetch(url, { signal: AbortSignal.timeout(5_000) })).text(),
      name,
      labelFilter,
    );
  } catch {
    return undefined;
  }
}

/** The sum of a metric's samples (those whose labels include `labelFilter`) in a Prometheus text exposition. */
export function metricSum(text: string, name: string, labelFilter = ''): number | undefined {
  let total: number | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!match || match[1] !== name) continue;
    if (labelFilter && !(match[2] ?? '').includes(labelFilter)) continue;
    total = (total ?? 0) + Number(match[3]);
  }
  return total;
}

/** Roles of process trees the bench started itself, by the tree's root pid (claimProcessTree). */
const claimedTrees = new Map<number, string>();

/**
 * Shows `pid` and its descendants under `role` in stackProcesses (and so as a row of cpuDuring),
 * whatever their command lines say: e.g. a second PostgreSQL that must not count as the service's.
 */
export function claimProcessTree(pid: number, role: string): void {
  claimedTrees.set(pid, role);
}

/** A stack process's role by its command line. */
function commandRole(cmd: string): string | undefined {
  if (cmd.includes('server start-dev')) return 'temporal dev server';
  if (/(^|\/)temporal-server\s/.test(cmd)) return 'temporal server';
  if (/(^|\/)postgres(\s|$)/.test(cmd) || cmd.startsWith('postgres:')) return 'postgres';
  if (cmd.includes('src/worker.ts')) return 'worker';
  if (cmd.includes('src/main/api.ts')) return 'api';
  if (cmd.includes('dev/sandbox/main.ts')) return 'sandbox';
  if (/anvil\s/.test(cmd)) return 'anvil';
  return undefined;
}

function claimedRole(pid: number, parents: Map<number, number>): string | undefined {
  for (let p: number | undefined = pid, depth = 0; p && depth < 6; p = parents.get(p), depth += 1) {
    const role = claimedTrees.get(p);
    if (role) return role;
  }
  return undefined;
}

/** The processes of this checkout's stack, by role, found through /proc (Linux). */
export function stackProcesses(): { role: string; pid: number }[] {
  const found: { role: string; pid: number }[] = [];
  if (!existsSync('/proc')) return found;
  const ours = new Set<number>();
  const parents = new Map<number, number>();
  const commands = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    try {
      commands.set(pid, readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' '));
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      parents.set(pid, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      if (readlinkSync(`/proc/${pid}/cwd`).startsWith(ROOT)) ours.add(pid);
    } catch {
      continue;
    }
  }
  // Other checkouts run their own stacks and test servers: only processes started from this one
  // (by working directory, or as children of those, like PostgreSQL's backends) count.
  const isOurs = (pid: number): boolean => {
    for (let p: number | undefined = pid, depth = 0; p && depth < 6; p = parents.get(p), depth += 1) {
      if (ours.has(p)) return true;
    }
    return false;
  };
  for (const [pid, cmd] of commands) {
    if (pid === process.pid || !isOurs(pid)) continue;
    const role = claimedRole(pid, parents) ?? commandRole(cmd);
    if (role) found.push({ role, pid });
  }
  return found;
}

const CLOCK_TICKS = 100; // USER_HZ on Linux

function cpuTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime + stime
  } catch {
    return undefined;
  }
}

export function rssBytes(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /VmRSS:\s+(\d+)/.exec(status);
    return kb ? Number(kb[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** CPU used by each role of the stack (and the bench itself) from `start` to `stop`, in cores. */
export function cpuMeter(): { start(): void; stop(): Record<string, number> } {
  let procs: { role: string; pid: number }[] = [];
  let before = new Map<number, number | undefined>();
  let began = 0;
  return {
    start() {
      procs = [...stackProcesses(), { role: 'bench (load + floor worker)', pid: process.pid }];
      before = new Map(procs.map((p) => [p.pid, cpuTicks(p.pid)]));
      began = performance.now();
    },
    stop() {
      const seconds = (performance.now() - began) / 1000;
      const cores: Record<string, number> = {};
      for (const p of procs) {
        const a = before.get(p.pid);
        const b = cpuTicks(p.pid);
        if (a === undefined || b === undefined) continue;
        cores[p.role] = (cores[p.role] ?? 0) + (b - a) / CLOCK_TICKS / seconds;
      }
      return cores;
    },
  };
}
