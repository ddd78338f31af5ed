import { privateKeyToAddress } from 'viem/accounts';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { findPartnerByKeyHash, createPartner, hashApiKey } from '../../src/adapters/db/partners-repo';
import { runMigrations } from '../../src/adapters/db/migrate';
import { createPool } from '../../src/adapters/db/pool';
import { loadApiConfig, loadWorkerConfig } from '../../src/config';
import { CODEC_BASE_PATH } from '../../src/temporal/codec-endpoint';
import { devServerSearchAttributes } from '../../src/temporal/search-attribute-registry';
import { EXIT_WITH_LAUNCHER_IMPORT } from './exit-with-launcher';
import {
  ensureLocalContracts,
  localChainEnv,
  readLocalChainRecord,
  writeLocalChainRecord,
  type LocalContracts,
} from './local-contracts';
import { anvilAccount, startAnvil } from './infra/anvil';
import { reachableDataDir, startEmbeddedPostgres } from './infra/postgres';
import { leftoverClusters } from './infra/postgres-relocation';
import { spawnManaged } from './infra/processes';
import { repoRoot } from './infra/temporal-binaries';
import { startTemporalDevServer } from './infra/temporal-dev-server';
import { findLeftovers, launcherMark, stopLeftovers } from './leftovers';
import { createLineFormatter } from './log-format';
import { apiPixSandboxEnv, apiPixServiceEnv, fromSource, sandboxEnv, SERVICE_ENTRIES } from './stack-env';
import { registerLocalPixWebhook } from './local-api-pix';
import { acquireLock } from './stack-lock';
import { assertPortsFree, portClaims, stackSettings, usesLocalApiPix } from './stack-settings';
import { Supervised, type Part } from './supervisor';

/**
 * `npm start`: the whole stack on the local defaults (docs/decisions.md D2), state kept under
 * .data/ across restarts. A variable that points at an outside service (DATABASE_URL,
 * TEMPORAL_ADDRESS, EVM_RPC_URL, PROVIDER_API_URL) replaces the local one, and USDT_CONTRACT_ADDRESS
 * or SANCTIONS_ORACLE_ADDRESS the local chain's test contract. What it does when a
 * part dies, when it is stopped or killed, and when a stack already runs: docs/development.md.
 */

const ROOT = repoRoot();
const settings = stackSettings(ROOT);
const DATA = settings.dataDir;

// Pretty, one coloured line per event at a terminal; the JSON lines as they are for a log collector.
const format = createLineFormatter({
  pretty: Boolean(process.stdout.isTTY),
  colour: Boolean(process.stdout.isTTY) && process.stdout.hasColors?.() === true,
});
// After SIGHUP the terminal is gone and writes fail (EIO): the stop must go on regardless.
process.stdout.on('error', () => {});
const say = (line: string, level: 'info' | 'warn' | 'error' = 'info') =>
  process.stdout.write(`${format.launcher(line, level)}\n`);

// Everything started, by name; stopped in STOP_ORDER whatever order it started in.
const parts = new Map<string, Supervised>();
// The api stops taking requests and finishes the ones in flight, then the worker drains its
// activities, then the sandbox, and only then what they all depend on, so nothing in flight meets
// a closed pool.
const STOP_ORDER = ['api', 'worker', 'sandbox', 'postgres', 'temporal', 'anvil'];
let releaseLock: (() => void) | undefined;
let shuttingDown = false;

async function supervise(part: Part): Promise<void> {
  if (shuttingDown) throw new Error('stopping');
  const supervised = new Supervised(part, say);
  parts.set(part.name, supervised);
  await supervised.start();
}

async function shutdown(code: number, why: string): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  const started = Date.now();
  say(`stopping (${why})...`);
  for (const name of STOP_ORDER) {
    const part = parts.get(name);
    if (!part) continue;
    const t = Date.now();
    await part.stop().catch((err: unknown) => say(`${name} did not stop cleanly: ${String(err)}`, 'warn'));
    say(`stopped ${name} (${((Date.now() - t) / 1000).toFixed(1)}s)`);
  }
  say(`stopped everything in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  releaseLock?.();
  process.exit(code);
}

// Before anything starts: a signal during start-up stops what already runs, in order. SIGHUP is a
// closed terminal; every part runs in its own process group, so this launcher is the only one
// that gets the terminal's signals, and stops them all.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => void shutdown(0, signal));
}

async function main(): Promise<void> {
  mkdirSync(DATA, { recursive: true });
  const env = { ...process.env };
  // The local chain's funded treasury, so SETTLEMENT_MODE=treasury works without any other setting
  // (config refuses treasury mode without a key, so it is supplied before the first check).
  if (!process.env.EVM_RPC_URL) env.TREASURY_PRIVATE_KEY ??= anvilAccount('treasury').privateKey;
  if (env.TREASURY_PRIVATE_KEY)
    env.TREASURY_ADDRESS ??= privateKeyToAddress(env.TREASURY_PRIVATE_KEY as `0x${string}`);
  // PIX_PROVIDER=bcb-api-pix with no institution of its own: the sandbox's API Pix face plays one,
  // with the certificates it makes in the data directory.
  const localApiPix = usesLocalApiPix(process.env);
  const apiPixFace = { port: settings.sandboxApiPixPort, certDir: path.join(DATA, 'sandbox-api-pix') };
  if (localApiPix) {
    for (const [name, value] of Object.entries(apiPixServiceEnv(apiPixFace))) env[name] ??= value;
  }
  // The Web UI calls the codec endpoint from its own origin.
  env.CODEC_CORS_ORIGINS ??= `http://127.0.0.1:${settings.temporalUiPort},http://localhost:${settings.temporalUiPort}`;
  // Both services' settings, checked before anything starts.
  const config = { ...loadWorkerConfig(env), ...loadApiConfig(env) };
  const apiUrl = `http://127.0.0.1:${config.PORT}`;

  const lock = acquireLock(DATA, apiUrl);
  if (!lock.acquired) {
    say(
      `the local stack of ${DATA} is already running: launcher pid ${lock.holder.pid}, API ${lock.holder.apiUrl}. ` +
        `Stop it with Ctrl-C in its terminal or 'kill ${lock.holder.pid}'.`,
      'error',
    );
    process.exit(1);
  }
  releaseLock = lock.release;
  if (lock.stale) say(`taking over the lock of launcher pid ${lock.stale.pid}, which is no longer running`);

  const pgDataDir = process.env.DATABASE_URL
    ? undefined
    : reachableDataDir(path.join(DATA, 'postgres'), (line) =>
        say(line.replace(/^\[postgres\] /, 'PostgreSQL: ')),
      );
  await stopLeftovers(findLeftovers(DATA, pgDataDir), say);
  if (pgDataDir && pgDataDir !== path.join(DATA, 'postgres')) reportLeftoverClusters();
  await assertPortsFree(portClaims(settings, config, process.env));

  if (!process.env.DATABASE_URL) {
    say(`starting PostgreSQL on 127.0.0.1:${settings.postgresPort}`);
    let dataDir = '';
    await supervise({
      name: 'postgres',
      start: async () => {
        const pg = await startEmbeddedPostgres({
          dataDir: path.join(DATA, 'postgres'),
          port: settings.postgresPort,
          persistent: true,
        });
        dataDir = pg.dataDir;
        env.DATABASE_URL = pg.databaseUrl;
        return pg;
      },
    });
    say(
      `PostgreSQL data in ${path.relative(ROOT, dataDir).startsWith('..') ? dataDir : path.relative(ROOT, dataDir)}`,
    );
  }
  await runMigrations(env.DATABASE_URL ?? config.DATABASE_URL);

  // PIX keys are encrypted in Temporal payloads locally too; the key stays in .data across restarts.
  env.PAYLOAD_ENCRYPTION_KEY ??= ensurePayloadKey();
  const codecEndpoint = `http://127.0.0.1:${config.METRICS_PORT}${CODEC_BASE_PATH}`;

  if (!process.env.TEMPORAL_ADDRESS) {
    say(
      `starting Temporal dev server on 127.0.0.1:${settings.temporalPort}, Web UI on ${settings.temporalUiPort}`,
    );
    await supervise({
      name: 'temporal',
      start: async () => {
        const temporal = await startTemporalDevServer({
          port: settings.temporalPort,
          uiPort: settings.temporalUiPort,
          dbFile: path.join(DATA, 'temporal.sqlite'),
          namespace: config.TEMPORAL_NAMESPACE,
          searchAttributes: devServerSearchAttributes(),
          // The Web UI decrypts payloads through the api's codec endpoint (ops port).
          extraArgs: ['--ui-codec-endpoint', codecEndpoint],
          ownProcessGroup: true,
        });
        env.TEMPORAL_ADDRESS = temporal.address;
        return temporal;
      },
    });
  }

  if (!process.env.EVM_RPC_URL) {
    say(`starting anvil (chain id 42161) on 127.0.0.1:${settings.anvilPort}`);
    await supervise({
      name: 'anvil',
      start: async () => {
        // The chain is kept in its state file (dumped every few seconds and on a clean stop), so
        // a restart after a crash finds the token and the balances again.
        const anvil = await startAnvil({
          port: settings.anvilPort,
          chainId: 42161,
          stateFile: path.join(DATA, 'anvil-state.json'),
          ownProcessGroup: true,
        });
        env.EVM_RPC_URL = anvil.rpcUrl;
        return anvil;
      },
    });
    const local = await ensureLocalChain(env.EVM_RPC_URL!);
    say(`USDT test token at ${local.usdtAddress}`);
    say(`sanctions oracle (test) at ${local.sanctionsOracleAddress}`);
    Object.assign(env, localChainEnv(process.env, local));
  }

  // exit-with-launcher stops the service if this launcher dies without stopping it.
  const service = (name: string, entry: string, childEnv: NodeJS.ProcessEnv): Part => ({
    name,
    start: async () =>
      spawnManaged({
        name,
        command: process.execPath,
        // The mark after the entry lets a later start recognise the service as this stack's.
        args: [...fromSource(path.join(ROOT, entry), EXIT_WITH_LAUNCHER_IMPORT), launcherMark(DATA)],
        cwd: ROOT,
        env: childEnv,
        ownProcessGroup: true,
        ipc: true,
        log: (line) => process.stdout.write(`${format.child(name, line.slice(name.length + 3))}\n`),
      }),
  });

  if (!process.env.PROVIDER_API_URL || localApiPix) {
    const sandbox = service('sandbox', SERVICE_ENTRIES.sandbox, {
      ...process.env,
      ...sandboxEnv({
        port: settings.sandboxPort,
        webhookUrl: `${apiUrl}/webhooks/sandbox`,
        chain: { rpcUrl: env.EVM_RPC_URL!, usdtAddress: env.USDT_CONTRACT_ADDRESS! },
        walletKey: anvilAccount('provider-sandbox').privateKey,
      }),
      ...(localApiPix && apiPixSandboxEnv(apiPixFace)),
    });
    await supervise(
      localApiPix
        ? {
            name: sandbox.name,
            // Its webhook registration lives in the sandbox's memory: registered again on every start,
            // as an operator registers it at a real institution (`admin pix webhook set`).
            start: async () => {
              const running = await sandbox.start();
              const url = `${apiUrl}/webhooks/${config.PROVIDER_NAME}`;
              await registerLocalPixWebhook(env, url);
              say(`API Pix sandbox https://127.0.0.1:${apiPixFace.port}: webhook ${url}/pix registered`);
              return running;
            },
          }
        : sandbox,
    );
    env.PROVIDER_API_URL ??= `http://127.0.0.1:${settings.sandboxPort}`;
  }

  const demo = await ensureDemoPartner(env.DATABASE_URL ?? config.DATABASE_URL);
  await supervise(service('worker', SERVICE_ENTRIES.worker, env));
  await supervise(service('api', SERVICE_ENTRIES.api, env));

  await waitForReady(`${apiUrl}/readyz`, 120_000);
  const uiUrl = `http://127.0.0.1:${settings.temporalUiPort}`;
  process.stdout.write(
    [
      '',
      'Payout service is up:',
      `  API              ${apiUrl}   (ready: ${apiUrl}/readyz, docs: ${apiUrl}/docs)`,
      `  Temporal Web UI  ${uiUrl}`,
      `  Metrics          http://127.0.0.1:${config.METRICS_PORT}/metrics (api), http://127.0.0.1:${config.WORKER_METRICS_PORT}/metrics (worker)`,
      `  Payload codec    ${codecEndpoint} (the Web UI decrypts workflow payloads through it)`,
      `  Payouts in UI    ${uiUrl}/namespaces/${config.TEMPORAL_NAMESPACE}/workflows?query=${encodeURIComponent(`PartnerId="${demo.partner_id}"`)}`,
      `  Provider sandbox ${env.PROVIDER_API_URL}`,
      ...(localApiPix
        ? [`  API Pix sandbox  ${env.PIX_API_URL} (mutual TLS; PIX_PROVIDER=bcb-api-pix)`]
        : []),
      `  EVM node         ${env.EVM_RPC_URL} (chain id ${config.EVM_CHAIN_ID}), USDT ${env.USDT_CONTRACT_ADDRESS}`,
      `  Sanctions oracle ${env.SANCTIONS_ORACLE_ADDRESS ?? '(SANCTIONS_ORACLE_ADDRESS not set)'}`,
      `  PostgreSQL       ${redactPassword(env.DATABASE_URL ?? config.DATABASE_URL)}`,
      '',
      `Demo partner ${demo.partner_id}`,
      `  X-Api-Key: ${demo.api_key}`,
      '',
      'Try:',
      `  curl -s -X POST ${apiUrl}/v1/payouts -H 'X-Api-Key: ${demo.api_key}' -H 'content-type: application/json' \\`,
      `    -d '{"amount_brl": 100.00, "receiver_wallet": "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "pix_key": "12345678901", "pix_key_type": "CPF"}'`,
      '',
      'Or watch one payout go through, with its PIX QR code: npm run demo',
      '',
      'Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
  say(`ready (launcher pid ${process.pid})`);
}

/** Clusters of checkouts that are gone are never reused; the developer decides when they go. */
function reportLeftoverClusters(): void {
  for (const leftover of leftoverClusters()) {
    say(
      `PostgreSQL data of a checkout that no longer exists (${leftover.requested ?? 'made before checkout ids'}) ` +
        `is in ${leftover.dir}; 'npm run local:prune' removes it`,
      'warn',
    );
  }
}

/** One payload key per checkout, made on first start (AES-256; never used outside this machine). */
function ensurePayloadKey(): string {
  const file = path.join(DATA, 'payload-encryption-key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const key = randomBytes(32).toString('base64');
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}

/** The contracts survive restarts with anvil's state file; redeployed only when the chain lost one or holds an older build. */
async function ensureLocalChain(rpcUrl: string): Promise<LocalContracts> {
  const local = await ensureLocalContracts(rpcUrl, { known: readLocalChainRecord(DATA) });
  writeLocalChainRecord(DATA, local);
  return local;
}

/** The demo partner's key is kept in .data (local only) so every start can print it again. */
async function ensureDemoPartner(databaseUrl: string): Promise<{ partner_id: string; api_key: string }> {
  const file = path.join(DATA, 'demo-partner.json');
  const db = createPool(databaseUrl, 1);
  try {
    if (existsSync(file)) {
      const saved = JSON.parse(readFileSync(file, 'utf8')) as { partner_id: string; api_key: string };
      if (await findPartnerByKeyHash(db, hashApiKey(saved.api_key))) return saved;
    }
    const { partner, apiKey } = await createPartner(db, 'Demo partner');
    const demo = { partner_id: partner.id, api_key: apiKey };
    writeFileSync(file, JSON.stringify(demo, null, 2), { mode: 0o600 });
    return demo;
  } finally {
    await db.end();
  }
}

async function waitForReady(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline && !shuttingDown) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) return;
      last = await res.text();
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`the api did not become ready within ${timeoutMs / 1000}s: ${last}`);
}

function redactPassword(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]+@/, '//$1:***@');
}

main().catch(async (err: unknown) => {
  if (shuttingDown) return;
  say(`failed to start: ${err instanceof Error ? err.message : String(err)}`, 'error');
  await shutdown(1, 'start-up failed');
});
