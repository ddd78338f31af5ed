import { randomBytes, randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  bundleWorkflowCode,
  DefaultLogger,
  Runtime,
  type Worker,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { createUsdtLedger } from '../../src/adapters/chain/usdt-ledger';
import { createPartner } from '../../src/adapters/db/partners-repo';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { createSecretBox } from '../../src/adapters/secrets/secret-box';
import { createHttpProvider } from '../../src/adapters/provider/http-provider';
import { createCachedQuote } from '../../src/adapters/provider/quote-cache';
import { buildApp } from '../../src/api/app';
import { loadApiConfig, loadWorkerConfig, type ApiConfig, type WorkerConfig } from '../../src/config';
import type { PayoutResponse } from '../../src/domain/payout';
import { deployTestUsdt } from '../../dev/local/deploy-test-usdt';
import { anvilAccount, startAnvil } from '../../dev/local/infra/anvil';
import { freePort } from '../../dev/local/infra/ports';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { buildSandboxApp } from '../../dev/sandbox/app';
import { loadSandboxConfig } from '../../dev/sandbox/config';
import { createPayoutWorker } from '../../src/main/worker';
import { callbackSenderOptionsOf, payloadKeysOf, settlementNetworkOf } from '../../src/main/wiring';
import { testDatabaseUrl } from './env';
import { startProviderProxy, type ProviderProxy } from './provider-proxy';
import { createDevServerEnv } from './temporal';
import { createDataConverter } from '../../src/temporal/data-converter';
import { PAYOUT_SEARCH_ATTRIBUTES } from '../../src/workflows/search-attributes';

/**
 * The whole service on real servers, in one test file: a Temporal dev server, the shared test
 * PostgreSQL, anvil (chain id 42161) with the USDT test token, the provider sandbox, a worker and
 * the api, each on a free loopback port. Nothing is mocked.
 */
export interface TestStack {
  /** The settings of the api and of the worker, which run in this process. */
  config: ApiConfig & WorkerConfig;
  apiUrl: string;
  sandboxUrl: string;
  rpcUrl: string;
  usdtAddress: Address;
  /** This stack's own funded treasury (treasury mode): stacks share PostgreSQL, never a nonce sequence. */
  treasury: { address: Address; privateKey: `0x${string}` };
  /** The wallet the sandbox settles from: this stack's own, so its transfers are this stack's alone. */
  sandboxWallet: Address;
  db: Db;
  temporal: Client;
  testEnv: TestWorkflowEnvironment;
  /** With `countProviderCalls`: what reached the provider (charges it created, by payout id). */
  providerProxy?: ProviderProxy;
  /** The metrics registry the in-process api and worker share. */
  metrics: ReturnType<typeof createMetrics>;
  /** A new partner with a fresh API key (tests isolate themselves by partner). */
  createPartner(name?: string): Promise<{ partnerId: string; apiKey: string }>;
  /** Another api process-equivalent on its own port, sharing database and Temporal. */
  startApiReplica(): Promise<{ url: string; close(): Promise<void> }>;
  startWorker(): Promise<void>;
  stopWorker(): Promise<void>;
  /** The payer pays a BR Code through the sandbox's bank. */
  pay(pixCopyPaste: string, outcome?: 'settled' | 'settlement_failed'): Promise<void>;
  /** The same, with the payer's edits: another amount, or a payment whose webhook is lost. Returns its event id. */
  payWith(
    pixCopyPaste: string,
    opts: { amountBrl?: number; notify?: boolean; outcome?: 'settled' | 'settlement_failed' },
  ): Promise<string>;
  /** Polls GET /v1/payouts/{id} like a partner until the status is one of `statuses`. */
  waitForStatus(
    apiKey: string,
    payoutId: string,
    statuses: string[],
    timeoutMs?: number,
  ): Promise<PayoutResponse>;
  close(): Promise<void>;
}

export interface StackOptions {
  /** Service env overrides (SETTLEMENT_MODE, rate limits, ...). */
  env?: Record<string, string>;
  /** Route the service's provider calls through a counting proxy (`providerProxy`), e.g. to count charges. */
  countProviderCalls?: boolean;
  /** Provider sandbox settings (e.g. SANDBOX_SPREAD), over the defaults. */
  sandboxEnv?: Record<string, string>;
  /** Where the sandbox POSTs its webhooks instead of the api (a test that delivers them itself). */
  sandboxWebhookUrl?: string;
  /** Start without a worker (e.g. to prove GET falls back to the read model). Default true. */
  worker?: boolean;
}

export const SEARCH_ATTRIBUTES = [...PAYOUT_SEARCH_ATTRIBUTES];

const quiet = process.env.TEST_LOG ? 'debug' : 'silent';
// The SDK's own worker logs are noise in a passing run; TEST_LOG=1 brings them back.
try {
  Runtime.install({ logger: new DefaultLogger(process.env.TEST_LOG ? 'INFO' : 'WARN') });
} catch {
  // Already installed by an earlier import in this jest worker.
}
let sharedBundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/** The workflow bundle is built once per test file (webpack takes a second or two). */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  sharedBundle ??= bundleWorkflowCode({
    workflowsPath: require.resolve('../../src/workflows'),
    logger: {
      log: () => {},
      trace: () => {},
      debug: () => {},
      info: () => {},
      warn: () => {},
      error: () => {},
    },
  });
  return sharedBundle;
}

export async function startStack(opts: StackOptions = {}): Promise<TestStack> {
  const closers: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const c of closers.reverse()) await c().catch(() => {});
  };
  try {
    // Payloads are encrypted as in production (a test may pass PAYLOAD_ENCRYPTION_KEY: '' to turn it off).
    const payloadKey = opts.env?.PAYLOAD_ENCRYPTION_KEY ?? randomBytes(32).toString('base64');
    const dataConverter = createDataConverter(
      payloadKeysOf({ PAYLOAD_ENCRYPTION_KEY: payloadKey || undefined }),
    );
    const testEnv = await createDevServerEnv({
      server: { searchAttributes: SEARCH_ATTRIBUTES },
      client: { dataConverter },
    });
    closers.push(() => testEnv.teardown());

    const anvil = await startAnvil({ port: await freePort(), chainId: 42161 });
    closers.push(() => anvil.stop());
    const treasuryKey = generatePrivateKey();
    const treasury = { address: privateKeyToAddress(treasuryKey), privateKey: treasuryKey };
    // The sandbox's wallet is this stack's own too. Every stack's anvil is chain 42161 and all share
    // PostgreSQL, where on-chain transfers are claimed by (chain id, tx hash, log index): a shared
    // dev account would sign byte-identical transfers (same nonce, receiver, amount) on two stacks.
    const sandboxWalletKey = generatePrivateKey();
    for (const address of [treasury.address, privateKeyToAddress(sandboxWalletKey)]) {
      await fetch(anvil.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'anvil_setBalance',
          params: [address, '0x56BC75E2D63100000'],
        }),
      });
    }
    const usdtAddress = await deployTestUsdt({
      rpcUrl: anvil.rpcUrl,
      deployerKey: anvilAccount('deployer').privateKey,
      mints: [
        { to: privateKeyToAddress(sandboxWalletKey), units: 1_000_000_000_000n },
        { to: treasury.address, units: 1_000_000_000_000n },
      ],
    });

    const apiPort = await freePort();
    const sandboxPort = await freePort();
    const sandbox = buildSandboxApp(
      loadSandboxConfig({
        SANDBOX_PORT: String(sandboxPort),
        SANDBOX_WEBHOOK_URL: opts.sandboxWebhookUrl ?? `http://127.0.0.1:${apiPort}/webhooks/sandbox`,
        SANDBOX_EVM_RPC_URL: anvil.rpcUrl,
        SANDBOX_USDT_ADDRESS: usdtAddress,
        SANDBOX_WALLET_PRIVATE_KEY: sandboxWalletKey,
        SANDBOX_LOG_LEVEL: quiet,
        ...opts.sandboxEnv,
      }),
      { webhook: { initialDelayMs: 100, maxDelayMs: 1_000 } },
    );
    await sandbox.listen({ host: '127.0.0.1', port: sandboxPort });
    closers.push(() => sandbox.close());
    const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
    const providerProxy = opts.countProviderCalls
      ? await startProviderProxy(sandboxUrl, await freePort())
      : undefined;
    if (providerProxy) closers.push(() => providerProxy.close());

    const env = {
      LOG_LEVEL: quiet,
      PORT: String(apiPort),
      DATABASE_URL: testDatabaseUrl(),
      TEMPORAL_ADDRESS: testEnv.address,
      TEMPORAL_NAMESPACE: testEnv.namespace ?? 'default',
      TEMPORAL_TASK_QUEUE: `payouts-${randomUUID().slice(0, 8)}`,
      PROVIDER_API_URL: providerProxy?.url ?? sandboxUrl,
      EVM_RPC_URL: anvil.rpcUrl,
      USDT_CONTRACT_ADDRESS: usdtAddress,
      TREASURY_PRIVATE_KEY: treasury.privateKey,
      PAYLOAD_ENCRYPTION_KEY: payloadKey,
      // Per-address buckets live in the run's one PostgreSQL and every stack calls from 127.0.0.1:
      // out of the way unless a test sets its own (from an address of its own).
      AUTH_FAILURE_LIMIT_PER_MINUTE: '1000000',
      WEBHOOK_RATE_LIMIT_PER_MINUTE: '1000000',
      ...opts.env,
    };
    const config = { ...loadWorkerConfig(env), ...loadApiConfig(env) };
    const db = createPool(config.DATABASE_URL, 5);
    closers.push(() => db.end());
    const logger = createLogger({ level: config.LOG_LEVEL, name: 'test' });
    const metrics = createMetrics();
    const provider = createHttpProvider({ baseUrl: config.PROVIDER_API_URL, timeoutMs: 5_000 });
    const temporal = testEnv.client;

    const apis: FastifyInstance[] = [];
    const listenApi = async (port: number) => {
      const app = await buildApp({
        config,
        db,
        temporal,
        quote: createCachedQuote(provider, { ttlMs: config.QUOTE_CACHE_SECONDS * 1000 }),
        logger,
        metrics,
      });
      await app.listen({ host: '127.0.0.1', port });
      apis.push(app);
      return app;
    };
    const mainApi = await listenApi(apiPort);
    closers.push(() => mainApi.close());

    let worker: Worker | undefined;
    let running: Promise<void> | undefined;
    const startWorker = async () => {
      if (worker) return;
      worker = await createPayoutWorker({
        connection: testEnv.nativeConnection,
        dataConverter,
        namespace: testEnv.namespace ?? 'default',
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        workflowBundle: await workflowBundle(),
        deps: {
          db,
          provider,
          ledger: createUsdtLedger({
            rpcUrl: config.EVM_RPC_URL,
            chainId: config.EVM_CHAIN_ID,
            usdtAddress,
            treasuryPrivateKey: treasury.privateKey,
          }),
          logger,
          metrics,
        },
        callbacks: callbackSenderOptionsOf(config),
        secrets: createSecretBox(payloadKeysOf(config)),
        network: settlementNetworkOf(config),
      });
      running = worker.run();
    };
    const stopWorker = async () => {
      if (!worker) return;
      worker.shutdown();
      await running;
      worker = undefined;
    };
    if (opts.worker !== false) await startWorker();
    closers.push(stopWorker);

    const apiUrl = `http://127.0.0.1:${apiPort}`;
    const payWith: TestStack['payWith'] = async (pixCopyPaste, opts) => {
      const res = await fetch(`${sandboxUrl}/sandbox/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          pix_copy_paste: pixCopyPaste,
          outcome: opts.outcome ?? 'settled',
          ...(opts.amountBrl !== undefined && { amount_brl: opts.amountBrl }),
          ...(opts.notify !== undefined && { notify: opts.notify }),
        }),
      });
      if (res.status !== 202) throw new Error(`sandbox payment answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { event_id: string }).event_id;
    };
    return {
      config,
      apiUrl,
      sandboxUrl,
      rpcUrl: anvil.rpcUrl,
      usdtAddress,
      treasury,
      sandboxWallet: privateKeyToAddress(sandboxWalletKey),
      db,
      temporal,
      testEnv,
      metrics,
      ...(providerProxy ? { providerProxy } : {}),
      async createPartner(name = 'test partner') {
        const { partner, apiKey } = await createPartner(db, name);
        return { partnerId: partner.id, apiKey };
      },
      async startApiReplica() {
        const port = await freePort();
        const app = await listenApi(port);
        return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
      },
      startWorker,
      stopWorker,
      async pay(pixCopyPaste, outcome = 'settled') {
        await payWith(pixCopyPaste, { outcome });
      },
      payWith,
      async waitForStatus(apiKey, payoutId, statuses, timeoutMs = 30_000) {
        const deadline = Date.now() + timeoutMs;
        let last: PayoutResponse | undefined;
        while (Date.now() < deadline) {
          const res = await fetch(`${apiUrl}/v1/payouts/${payoutId}`, { headers: { 'x-api-key': apiKey } });
          if (res.status === 200) {
            last = (await res.json()) as PayoutResponse;
            if (statuses.includes(last.status)) return last;
          }
          await new Promise((r) => setTimeout(r, 250));
        }
        throw new Error(
          `payout ${payoutId} did not reach ${statuses.join('/')}; last: ${JSON.stringify(last)}`,
        );
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** POST /v1/payouts with JSON, returning status, headers and parsed body. */
export async function postPayout(
  apiUrl: string,
  apiKey: string | undefined,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const res = await fetch(`${apiUrl}/v1/payouts`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(apiKey === undefined ? {} : { 'x-api-key': apiKey }),
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

export const VALID_PAYOUT = {
  amount_brl: 100.0,
  receiver_wallet: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  pix_key: '12345678901',
  pix_key_type: 'CPF',
} as const;
