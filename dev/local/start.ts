import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Address } from 'viem';
import { findPartnerByKeyHash, createPartner, hashApiKey } from '../../src/adapters/db/partners-repo';
import { runMigrations } from '../../src/adapters/db/migrate';
import { createPool } from '../../src/adapters/db/pool';
import { loadConfig } from '../../src/config';
import { CODEC_BASE_PATH } from '../../src/temporal/codec-endpoint';
import { devServerSearchAttributes } from '../../src/temporal/search-attribute-registry';
import { ensureTestUsdt } from './test-usdt';
import { anvilAccount, startAnvil } from './infra/anvil';
import { startEmbeddedPostgres } from './infra/postgres';
import { describeExit, spawnManaged, type ManagedProcess } from './infra/processes';
import { createLineFormatter } from './log-format';
import { nextRestartDelay, restartDelay, RESTART_BACKOFF_MS } from './restart-policy';
import { repoRoot } from './infra/temporal-binaries';
import { startTemporalDevServer } from './infra/temporal-dev-server';

/**
 * `npm start`: the whole stack on the local defaults (docs/decisions.md D2), state kept under
 * .data/ across restarts. A variable that points at an outside service (DATABASE_URL,
 * TEMPORAL_ADDRESS, EVM_RPC_URL, PROVIDER_API_URL) replaces the local one.
 */

const ROOT = repoRoot();
const DATA = path.join(ROOT, '.data');
const TEMPORAL_UI_PORT = 8233;
const SANDBOX_PORT = 4000;
const ANVIL_PORT = 8545;
const POSTGRES_PORT = 5432;

type Stop = () => Promise<void>;
const stops: { name: string; stop: Stop }[] = [];
// Pretty, one coloured line per event at a terminal; the JSON lines as they are for a log collector.
const format = createLineFormatter({
  pretty: Boolean(process.stdout.isTTY),
  colour: Boolean(process.stdout.isTTY) && process.stdout.hasColors?.() === true,
});
const say = (line: string, level: 'info' | 'warn' | 'error' = 'info') =>
  process.stdout.write(`${format.launcher(line, level)}\n`);

async function main(): Promise<void> {
  mkdirSync(DATA, { recursive: true });
  const env = { ...process.env };
  // The local chain's funded treasury, so SETTLEMENT_MODE=treasury works without any other setting
  // (config refuses treasury mode without a key, so it is supplied before the first check).
  if (!process.env.EVM_RPC_URL) env.TREASURY_PRIVATE_KEY ??= anvilAccount('treasury').privateKey;
  const config = loadConfig(env);

  if (!process.env.DATABASE_URL) {
    say(`starting PostgreSQL on 127.0.0.1:${POSTGRES_PORT}`);
    const pg = await startEmbeddedPostgres({
      dataDir: path.join(DATA, 'postgres'),
      port: POSTGRES_PORT,
      persistent: true,
      // As root from a 0700 home, binaries and data move where the postgres user can reach them.
      log: (line) => {
        if (line.includes('cannot enter')) say(line.replace(/^\[postgres\] /, 'PostgreSQL: '));
      },
    });
    say(
      `PostgreSQL data in ${path.relative(ROOT, pg.dataDir).startsWith('..') ? pg.dataDir : path.relative(ROOT, pg.dataDir)}`,
    );
    stops.push({ name: 'postgres', stop: pg.stop });
    env.DATABASE_URL = pg.databaseUrl;
  }
  await runMigrations(env.DATABASE_URL ?? config.DATABASE_URL);

  // PIX keys are encrypted in Temporal payloads locally too; the key stays in .data across restarts.
  env.PAYLOAD_ENCRYPTION_KEY ??= ensurePayloadKey();
  const codecEndpoint = `http://127.0.0.1:${config.METRICS_PORT}${CODEC_BASE_PATH}`;

  if (!process.env.TEMPORAL_ADDRESS) {
    say(`starting Temporal dev server on 127.0.0.1:7233, Web UI on ${TEMPORAL_UI_PORT}`);
    const temporal = await startTemporalDevServer({
      port: 7233,
      uiPort: TEMPORAL_UI_PORT,
      dbFile: path.join(DATA, 'temporal.sqlite'),
      namespace: config.TEMPORAL_NAMESPACE,
      searchAttributes: devServerSearchAttributes(),
      // The Web UI decrypts payloads through the api's codec endpoint (ops port).
      extraArgs: ['--ui-codec-endpoint', codecEndpoint],
    });
    stops.push({ name: 'temporal', stop: temporal.stop });
    env.TEMPORAL_ADDRESS = temporal.address;
  }

  if (!process.env.EVM_RPC_URL) {
    say(`starting anvil (chain id 42161) on 127.0.0.1:${ANVIL_PORT}`);
    const anvil = await startAnvil({
      port: ANVIL_PORT,
      chainId: 42161,
      stateFile: path.join(DATA, 'anvil-state.json'),
    });
    stops.push({ name: 'anvil', stop: anvil.stop });
    env.EVM_RPC_URL = anvil.rpcUrl;
    env.USDT_CONTRACT_ADDRESS = await ensureLocalUsdt(anvil.rpcUrl);
    say(`USDT test token at ${env.USDT_CONTRACT_ADDRESS}`);
  }

  // tsx as a loader of the child's own node, not the tsx CLI: the CLI is a second process that
  // relays signals, so a Ctrl-C (sent to the whole process group) would arrive twice and cut the
  // worker's drain short.
  const tsx = ['--import', pathToFileURL(require.resolve('tsx')).href];
  const children = new Map<string, ManagedProcess>();
  const startChild = (
    name: string,
    entry: string,
    childEnv: NodeJS.ProcessEnv,
    backoffMs: number = RESTART_BACKOFF_MS.first,
  ) => {
    const startedAt = Date.now();
    const child = spawnManaged({
      name,
      command: process.execPath,
      args: [...tsx, entry],
      cwd: ROOT,
      env: childEnv,
      log: (line) => process.stdout.write(`${format.child(name, line.slice(name.length + 3))}\n`),
    });
    children.set(name, child);
    void child.exited.then((status) => {
      if (shuttingDown) return;
      // A crash restarts that service alone, after a growing pause (a service that keeps crashing
      // must not spin); the rest of the stack keeps running. A clean exit (Ctrl-C reached the
      // child first) is the start of a stop.
      if (status.code === 0) return void shutdown(0);
      const delay = restartDelay(backoffMs, Date.now() - startedAt);
      say(
        `${name} exited unexpectedly (${describeExit(status)}); restarting it in ${delay / 1000}s`,
        'error',
      );
      setTimeout(() => {
        if (!shuttingDown) startChild(name, entry, childEnv, nextRestartDelay(delay));
      }, delay).unref();
    });
    return child;
  };

  if (!process.env.PROVIDER_API_URL) {
    startChild('sandbox', 'dev/sandbox/main.ts', {
      ...process.env,
      SANDBOX_PORT: String(SANDBOX_PORT),
      SANDBOX_WEBHOOK_URL: `http://127.0.0.1:${config.PORT}/webhooks/sandbox`,
      SANDBOX_EVM_RPC_URL: env.EVM_RPC_URL,
      SANDBOX_USDT_ADDRESS: env.USDT_CONTRACT_ADDRESS,
      SANDBOX_WALLET_PRIVATE_KEY: anvilAccount('provider-sandbox').privateKey,
    });
    env.PROVIDER_API_URL = `http://127.0.0.1:${SANDBOX_PORT}`;
  }

  const demo = await ensureDemoPartner(env.DATABASE_URL ?? config.DATABASE_URL);
  startChild('worker', 'src/worker.ts', env);
  startChild('api', 'src/api/server.ts', env);

  const apiUrl = `http://127.0.0.1:${config.PORT}`;
  await waitForReady(`${apiUrl}/readyz`, 120_000);
  process.stdout.write(
    [
      '',
      'Payout service is up:',
      `  API              ${apiUrl}   (ready: ${apiUrl}/readyz, docs: ${apiUrl}/docs)`,
      `  Temporal Web UI  http://127.0.0.1:${TEMPORAL_UI_PORT}`,
      `  Metrics          http://127.0.0.1:${config.METRICS_PORT}/metrics (api), http://127.0.0.1:${config.WORKER_METRICS_PORT}/metrics (worker)`,
      `  Payload codec    ${codecEndpoint} (the Web UI decrypts workflow payloads through it)`,
      `  Payouts in UI    http://127.0.0.1:${TEMPORAL_UI_PORT}/namespaces/${config.TEMPORAL_NAMESPACE}/workflows?query=${encodeURIComponent(`PartnerId="${demo.partner_id}"`)}`,
      `  Provider sandbox ${env.PROVIDER_API_URL}`,
      `  EVM node         ${env.EVM_RPC_URL} (chain id ${config.EVM_CHAIN_ID}), USDT ${env.USDT_CONTRACT_ADDRESS}`,
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

  let shuttingDown = false;
  async function shutdown(code: number): Promise<void> {
    if (shuttingDown) return;
    shuttingDown = true;
    say('stopping...');
    // In order: the api stops taking requests and finishes the ones in flight, then the worker
    // drains its activities, then the sandbox, and only then what they all depend on (PostgreSQL,
    // Temporal, the chain), so nothing in flight meets a closed pool.
    for (const name of ['api', 'worker', 'sandbox']) await children.get(name)?.stop(30_000);
    for (const { name, stop } of stops.reverse()) {
      await stop().catch((err: unknown) => say(`${name} did not stop cleanly: ${String(err)}`));
    }
    process.exit(code);
  }
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
}

/** One payload key per checkout, made on first start (AES-256; never used outside this machine). */
function ensurePayloadKey(): string {
  const file = path.join(DATA, 'payload-encryption-key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const key = randomBytes(32).toString('base64');
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}

/** The token survives restarts with anvil's state file; redeploy only when the chain lost it. */
async function ensureLocalUsdt(rpcUrl: string): Promise<Address> {
  const file = path.join(DATA, 'local-chain.json');
  const known = existsSync(file)
    ? (JSON.parse(readFileSync(file, 'utf8')) as { usdtAddress: Address }).usdtAddress
    : undefined;
  const usdtAddress = await ensureTestUsdt(rpcUrl, known);
  writeFileSync(file, JSON.stringify({ usdtAddress }, null, 2));
  return usdtAddress;
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
  while (Date.now() < deadline) {
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
  say(`failed to start: ${err instanceof Error ? err.message : String(err)}`, 'error');
  for (const { stop } of stops.reverse()) await stop().catch(() => {});
  process.exit(1);
});
