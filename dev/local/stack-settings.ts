import path from 'node:path';
import type { ApiConfig, WorkerConfig } from '../../src/config';
import { isListening } from './infra/ports';
import { leftoverClusters, ROOT_STATE_DIR, type LeftoverCluster } from './infra/postgres-relocation';
import { commandLine, portHolder, type PortHolder } from './infra/proc';

/**
 * The launcher's own settings (docs/configuration.md, "Tooling and demo"): where its data lives and
 * the ports of the servers it starts. The api's and worker's ports are their own variables (PORT,
 * METRICS_PORT, WORKER_METRICS_PORT), the sandbox's is SANDBOX_PORT.
 */
export const LAUNCHER_DEFAULTS = {
  LOCAL_DATA_DIR: '.data',
  LOCAL_POSTGRES_PORT: 5432,
  LOCAL_TEMPORAL_PORT: 7233,
  LOCAL_TEMPORAL_UI_PORT: 8233,
  LOCAL_ANVIL_PORT: 8545,
} as const;

export interface StackSettings {
  dataDir: string;
  postgresPort: number;
  temporalPort: number;
  temporalUiPort: number;
  anvilPort: number;
  sandboxPort: number;
  /** The sandbox's API Pix face (mutual TLS), started when PIX_PROVIDER=bcb-api-pix names no PIX_API_URL. */
  sandboxApiPixPort: number;
}

function port(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > 65535) {
    throw new Error(`${name}=${raw} is not a TCP port`);
  }
  return value;
}

export function stackSettings(root: string, env: NodeJS.ProcessEnv = process.env): StackSettings {
  return {
    dataDir: path.resolve(root, env.LOCAL_DATA_DIR || LAUNCHER_DEFAULTS.LOCAL_DATA_DIR),
    postgresPort: port(env, 'LOCAL_POSTGRES_PORT', LAUNCHER_DEFAULTS.LOCAL_POSTGRES_PORT),
    temporalPort: port(env, 'LOCAL_TEMPORAL_PORT', LAUNCHER_DEFAULTS.LOCAL_TEMPORAL_PORT),
    temporalUiPort: port(env, 'LOCAL_TEMPORAL_UI_PORT', LAUNCHER_DEFAULTS.LOCAL_TEMPORAL_UI_PORT),
    anvilPort: port(env, 'LOCAL_ANVIL_PORT', LAUNCHER_DEFAULTS.LOCAL_ANVIL_PORT),
    sandboxPort: port(env, 'SANDBOX_PORT', 4000),
    sandboxApiPixPort: port(env, 'SANDBOX_API_PIX_PORT', 4443),
  };
}

export interface PortClaim {
  what: string;
  port: number;
  /** The variable that moves it. */
  variable: string;
}

/** PIX_PROVIDER=bcb-api-pix without an institution of its own: the sandbox's API Pix face plays it. */
export function usesLocalApiPix(env: NodeJS.ProcessEnv): boolean {
  return env.PIX_PROVIDER === 'bcb-api-pix' && !env.PIX_API_URL;
}

/** The ports this start will bind, for the parts it starts itself. */
export function portClaims(
  s: StackSettings,
  config: Pick<ApiConfig, 'PORT' | 'METRICS_PORT'> & Pick<WorkerConfig, 'WORKER_METRICS_PORT'>,
  env: NodeJS.ProcessEnv,
): PortClaim[] {
  const claims: PortClaim[] = [];
  if (!env.DATABASE_URL)
    claims.push({ what: 'PostgreSQL', port: s.postgresPort, variable: 'LOCAL_POSTGRES_PORT' });
  if (!env.TEMPORAL_ADDRESS) {
    claims.push({ what: 'Temporal dev server', port: s.temporalPort, variable: 'LOCAL_TEMPORAL_PORT' });
    claims.push({ what: 'Temporal Web UI', port: s.temporalUiPort, variable: 'LOCAL_TEMPORAL_UI_PORT' });
  }
  if (!env.EVM_RPC_URL) claims.push({ what: 'anvil', port: s.anvilPort, variable: 'LOCAL_ANVIL_PORT' });
  const localApiPix = usesLocalApiPix(env);
  if (!env.PROVIDER_API_URL || localApiPix)
    claims.push({ what: 'provider sandbox', port: s.sandboxPort, variable: 'SANDBOX_PORT' });
  if (localApiPix) {
    claims.push({ what: 'API Pix sandbox', port: s.sandboxApiPixPort, variable: 'SANDBOX_API_PIX_PORT' });
  }
  claims.push({ what: 'api', port: config.PORT, variable: 'PORT' });
  claims.push({ what: 'api ops port', port: config.METRICS_PORT, variable: 'METRICS_PORT' });
  claims.push({ what: 'worker ops port', port: config.WORKER_METRICS_PORT, variable: 'WORKER_METRICS_PORT' });
  return claims;
}

/**
 * Refuses to start on a port something else holds (after this stack's own leftovers were stopped,
 * whatever still listens is not ours), naming the holder when /proc shows it and the variable that
 * moves the port. All ports are checked before anything starts, so a refused start changes nothing.
 */
export async function assertPortsFree(
  claims: PortClaim[],
  relocatedClusters: string = ROOT_STATE_DIR,
): Promise<void> {
  const busy: string[] = [];
  for (const claim of claims) {
    if (!(await isListening('127.0.0.1', claim.port))) continue;
    const holder = await holderOf(claim.port);
    if (holder === FREE) continue;
    const by = holder ? ` by pid ${holder.pid} (${truncate(holder.command)})` : '';
    // Never stopped here (nothing proves it this stack's), but the user is told what it likely is.
    const sign = holder && removedCheckoutSign(holder, relocatedClusters);
    const orphan = sign ? `; ${sign}: stop it with \`kill ${holder.pid}\`, or` : ';';
    busy.push(
      `${claim.what}: port ${claim.port} on 127.0.0.1 is already in use${by}${orphan} set ${claim.variable} to use another port`,
    );
  }
  if (busy.length > 0) throw new Error(busy.join('\n'));
}

const RELEASE_WAIT_MS = 3_000;
const FREE = Symbol('free');

/**
 * Who holds a port found busy (undefined when /proc does not show it), or FREE once it is let go:
 * between the two looks, or, for a server on its way out (an earlier launcher's, dying of SIGPIPE as
 * it was stopped or just before), within RELEASE_WAIT_MS.
 */
async function holderOf(port: number): Promise<PortHolder | undefined | typeof FREE> {
  const seen = portHolder(port);
  if (!seen) return (await isListening('127.0.0.1', port)) ? undefined : FREE;
  if (!seen.exiting) return seen;
  if (await releasedWithin(port, RELEASE_WAIT_MS)) return FREE;
  const holder = portHolder(port) ?? seen;
  return (await isListening('127.0.0.1', port)) ? holder : FREE;
}

async function releasedWithin(port: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    if (!(await isListening('127.0.0.1', port))) return true;
  }
  return false;
}

/**
 * What shows a port's holder to be the server of a checkout that was removed while it ran (its
 * launcher SIGKILLed, then the folder deleted): its program is gone with its folder (PostgreSQL,
 * Temporal and anvil run from the checkout), or, for root under a 0700 home, its data is the
 * relocated cluster of a checkout that no longer exists (that PostgreSQL runs from a shared copy of
 * its binaries). Anything unreadable is no sign.
 */
function removedCheckoutSign(holder: PortHolder, relocatedClusters: string): string | undefined {
  if (holder.programDeleted) return 'its program and its folder are deleted (left by a removed checkout?)';
  const argv = commandLine(holder.pid) ?? [];
  const root = path.resolve(relocatedClusters);
  if (!argv.some((arg) => arg.startsWith(`${root}${path.sep}`))) return undefined;
  let clusters: LeftoverCluster[];
  try {
    clusters = leftoverClusters(root);
  } catch {
    return undefined; // not readable by this user: no sign either way
  }
  // A cluster from before checkout ids names no checkout: nothing shows that one gone.
  const requested = clusters.find(({ dir }) => argv.includes(dir))?.requested;
  return (
    requested &&
    `its data is the PostgreSQL cluster of a checkout that no longer exists or whose data was removed (${requested})`
  );
}

const truncate = (text: string) => (text.length > 120 ? `${text.slice(0, 117)}...` : text);
