import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, type Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { createUsdtLedger } from '../../src/adapters/chain/usdt-ledger';
import { createTreasuryHealthProbe } from '../../src/adapters/chain/treasury-health';
import { createPartner } from '../../src/adapters/db/partners-repo';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { createSecretBox } from '../../src/adapters/secrets/secret-box';
import { createHttpProvider } from '../../src/adapters/provider/http-provider';
import type { ApiDeps } from '../../src/api/app';
import { loadApiConfig, loadWorkerConfig, type ApiConfig, type WorkerConfig } from '../../src/config';
import { callbackSenderOptionsOf, payloadKeysOf } from '../../src/main/wiring';
import type { PayoutResponse } from '../../src/domain/payout';
import { freePort } from '../../dev/local/infra/ports';
import { SERVICE_ENTRIES, serviceEnv } from '../../dev/local/stack-env';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { createPayoutWorker } from '../../src/main/worker';
import { settlementNetworkOf } from '../../src/main/wiring';
import { createDataConverter } from '../../src/temporal/data-converter';
import { PAYOUT_SEARCH_ATTRIBUTES } from '../../src/workflows/search-attributes';
import { configuredScreening, startApi, type RunningApi } from './api';
import { cachedWorkflowBundle } from './bundle-cache';
import { compiledEntry } from './compiled';
import { startTestChain, type TestChain, type Wallet } from './chain';
import { createOwnDatabase } from './database';
import { testDatabaseUrl } from './env';
import { post } from './http';
import { seedPayouts } from './payouts';
import { startProviderProxy, type ProviderProxy } from './provider-proxy';
import { startSandbox, startWebhookTap } from './sandbox';
import { ServiceProcess } from './service-process';
import { createDevServerEnv } from './temporal';
import { until } from './until';
import { workflowBundleOptions } from '../../src/workflow-bundle';
import type { Tracing } from '../../src/observability/tracing';
import { tracingClientInterceptors } from '../../src/temporal/tracing';

/**
 * The whole service on real servers, in one test file: a Temporal dev server, the shared test
 * PostgreSQL, anvil (chain id 42161) with the USDT test token and the test sanctions oracle, the
 * provider sandbox, a worker and the api, each on a free loopback port. Nothing is mocked.
 */
export interface TestStack {
  /** The settings of the api and of the worker, which run in this process. */
  config: ApiConfig & WorkerConfig;
  apiUrl: string;
  sandboxUrl: string;
  chain: TestChain;
  rpcUrl: string;
  usdtAddress: Address;
  /** The test sanctions oracle (owner: the anvil deployer; see test/support/screening.ts to change its list). */
  sanctionsOracleAddress: Address;
  /** This stack's own funded treasury (treasury mode): stacks share PostgreSQL, never a nonce sequence. */
  treasury: Wallet;
  /** The wallet the sandbox settles from: this stack's own, so its transfers are this stack's alone. */
  sandboxWallet: Address;
  /** Every webhook token this stack's sandbox sent the api (none with `sandboxWebhookUrl`). */
  webhookTokens: readonly string[];
  db: Db;
  temporal: Client;
  testEnv: TestWorkflowEnvironment;
  /** With `proxyProvider`: what reached the provider, and the provider's outages. */
  providerProxy?: ProviderProxy;
  /** The metrics registry the in-process api and worker share. */
  metrics: ReturnType<typeof createMetrics>;
  /** What a process of the service (a spawned api or worker, the admin CLI) needs to join this stack. */
  serviceEnv: Readonly<Record<string, string>>;
  /** A new partner with a fresh API key (tests isolate themselves by partner). */
  createPartner(name?: string): Promise<{ partnerId: string; apiKey: string }>;
  /**
   * Another api in this process on this stack's database, Temporal and provider: a replica, or the
   * api with other settings (`overrides`) or collaborators (`deps`: a failing quote, another pool).
   * Closed with the stack.
   */
  startApi(
    overrides?: Partial<ApiConfig>,
    deps?: Partial<ApiDeps> & { providerUrl?: string | null; port?: number },
  ): Promise<RunningApi>;
  /**
   * The api or the worker as an OS process of its own, as deployed (`node` on the compiled src/...), on
   * this stack with `env` over its settings; resolves once it is ready. Killed with the stack.
   */
  startProcess(kind: 'api' | 'worker', env?: Record<string, string>): Promise<ServiceProcess>;
  startWorker(): Promise<void>;
  stopWorker(): Promise<void>;
  /** The payer pays a BR Code through the sandbox's bank. */
  pay(pixCopyPaste: string, outcome?: 'settled' | 'settlement_failed'): Promise<void>;
  /** The same, with the payer's edits: another amount, or a payment whose webhook is lost. Returns its event id. */
  payWith(
    pixCopyPaste: string,
    opts: { amountBrl?: number; notify?: boolean; outcome?: 'settled' | 'settlement_failed' },
  ): Promise<string>;
  /**
   * Read-model rows with no workflow behind them (seedPayouts of test/support/payouts.ts), as the
   * workflows would have written them; removed when the stack closes, open ones included.
   */
  seedPayouts(partnerId: string, opts: Parameters<typeof seedPayouts>[2]): Promise<string[]>;
  /** POST /v1/payouts of VALID_PAYOUT (with `body` over it) to a receiver wallet of its own; fails unless 201. */
  createPayout(
    apiKey: string,
    body?: Record<string, unknown>,
  ): Promise<{ payout: PayoutResponse; receiver: Address }>;
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
  /**
   * Route the service's provider calls through a proxy the test controls (`providerProxy`): it counts
   * what reached the provider and can take the provider down and bring it back.
   */
  proxyProvider?: boolean;
  /** Provider sandbox settings (e.g. SANDBOX_SPREAD), over the defaults. */
  sandboxEnv?: Record<string, string>;
  /** Where the sandbox POSTs its webhooks instead of the api (a test that delivers them itself). */
  sandboxWebhookUrl?: string;
  /** Start without a worker (e.g. to prove GET falls back to the read model). Default true. */
  worker?: boolean;
  /** A database of its own rather than the run's shared one: for a test that reads every row. */
  ownDatabase?: boolean;
  /** OpenTelemetry for the api (requests, client) and the worker (workflows, activities). */
  tracing?: Tracing;
}

export const SEARCH_ATTRIBUTES = [...PAYOUT_SEARCH_ATTRIBUTES];

export const VALID_PAYOUT = {
  amount_brl: 100.0,
  receiver_wallet: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  pix_key: '12345678901',
  pix_key_type: 'CPF',
} as const;

const quiet = process.env.TEST_LOG ? 'debug' : 'silent';
// The SDK's own worker logs are noise in a passing run; TEST_LOG=1 brings them back.
try {
  Runtime.install({ logger: new DefaultLogger(process.env.TEST_LOG ? 'INFO' : 'WARN') });
} catch {
  // Already installed by an earlier import in this jest worker.
}
let sharedBundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/**
 * The workflow bundle, read once per test file; built once per run and sources (webpack takes
 * seconds), see cachedWorkflowBundle.
 */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  sharedBundle ??= cachedWorkflowBundle(workflowBundleOptions());
  return sharedBundle;
}

/**
 * The file's stack: started before its first test (beforeAll) and closed after its last. What it
 * returns stands for the stack once started; using it outside a test throws. Options known only in
 * an earlier beforeAll (a port) are given as a function, called when the stack starts.
 */
export function useStack(opts: StackOptions | (() => StackOptions) = {}): TestStack {
  let stack: TestStack | undefined;
  beforeAll(async () => {
    stack = await startStack(typeof opts === 'function' ? opts() : opts);
  }, 120_000);
  afterAll(() => stack?.close());
  return new Proxy({} as TestStack, {
    get(_target, key) {
      if (!stack)
        throw new Error(`the stack is used before it started (${String(key)}): only in tests and hooks`);
      return Reflect.get(stack, key);
    },
  });
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

    // The treasury and the sandbox's wallet are this stack's own. Every stack's anvil is chain 42161
    // and all share PostgreSQL, where on-chain transfers are claimed by (chain id, tx hash, log index):
    // a shared dev account would sign byte-identical transfers (same nonce, receiver, amount) on two stacks.
    const treasuryKey = generatePrivateKey();
    const treasury = { address: privateKeyToAddress(treasuryKey), privateKey: treasuryKey };
    const sandboxWalletKey = generatePrivateKey();
    const sandboxWallet = privateKeyToAddress(sandboxWalletKey);
    const chain = await startTestChain({
      funded: [
        { wallet: sandboxWallet, usdtUnits: 1_000_000_000_000n },
        { wallet: treasury.address, usdtUnits: 1_000_000_000_000n },
      ],
    });
    closers.push(() => chain.stop());

    const apiPort = await freePort();
    const apiOrigin = `http://127.0.0.1:${apiPort}`;
    const tap = opts.sandboxWebhookUrl ? undefined : await startWebhookTap(apiOrigin);
    if (tap) closers.push(() => tap.close());
    const sandbox = await startSandbox({
      chain,
      walletKey: sandboxWalletKey,
      webhookUrl: opts.sandboxWebhookUrl ?? `${tap!.url}/webhooks/sandbox`,
      env: opts.sandboxEnv,
    });
    closers.push(() => sandbox.close());
    const providerProxy = opts.proxyProvider
      ? await startProviderProxy(sandbox.url, await freePort())
      : undefined;
    if (providerProxy) closers.push(() => providerProxy.close());

    const own = opts.ownDatabase ? await createOwnDatabase() : undefined;
    if (own) closers.push(() => own.drop());
    const env = {
      ...serviceEnv({
        databaseUrl: own?.url ?? testDatabaseUrl(),
        temporal: {
          address: testEnv.address,
          namespace: testEnv.namespace ?? 'default',
          taskQueue: `payouts-${randomUUID().slice(0, 8)}`,
        },
        providerUrl: providerProxy?.url ?? sandbox.url,
        chain,
        treasuryKey: treasury.privateKey,
        payloadKey,
      }),
      // Per-address buckets live in the run's one PostgreSQL and every stack calls from 127.0.0.1:
      // out of the way unless a test sets its own (from an address of its own).
      AUTH_FAILURE_LIMIT_PER_MINUTE: '1000000',
      WEBHOOK_RATE_LIMIT_PER_MINUTE: '1000000',
      ...opts.env,
    };
    const settings = { LOG_LEVEL: quiet, PORT: String(apiPort), ...env };
    const config = { ...loadWorkerConfig(settings), ...loadApiConfig(settings) };
    const db = createPool(config.DATABASE_URL, 5);
    closers.push(() => db.end());
    const seeded: string[] = [];
    closers.push(() => db.query('DELETE FROM payouts WHERE id = ANY($1)', [seeded]));
    const logger = createLogger({ level: config.LOG_LEVEL, name: 'test' });
    const metrics = createMetrics();
    const provider = createHttpProvider({ baseUrl: config.PROVIDER_API_URL, timeoutMs: 5_000 });
    const temporal = opts.tracing
      ? new Client({
          connection: testEnv.connection,
          namespace: testEnv.namespace ?? 'default',
          dataConverter,
          interceptors: tracingClientInterceptors(opts.tracing),
        })
      : testEnv.client;
    const screening = configuredScreening(config, db);

    const startApiHere: TestStack['startApi'] = async (overrides = {}, deps = {}) => {
      const api = await startApi({
        config: { ...config, ...overrides },
        db,
        temporal,
        logger,
        metrics,
        screening,
        ...(opts.tracing ? { tracing: opts.tracing } : {}),
        ...(config.SETTLEMENT_MODE === 'treasury' && {
          treasuryHealth: createTreasuryHealthProbe({
            rpcUrl: config.EVM_RPC_URL,
            chainId: config.EVM_CHAIN_ID,
            usdtAddress: chain.usdtAddress,
            treasuryAddress: treasury.address,
            // Tests flip the block and look at once.
            cacheMs: 0,
          }),
        }),
        ...deps,
      });
      closers.push(() => api.close());
      return api;
    };
    await startApiHere({}, { port: apiPort });

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
        ...(opts.tracing ? { tracing: opts.tracing } : {}),
        deps: {
          db,
          provider,
          settlementProvider: provider,
          returns: provider,
          refundPolicy: { autoReturnKinds: config.REFUND_AUTO_RETURN_KINDS },
          ledger: createUsdtLedger({
            rpcUrl: config.EVM_RPC_URL,
            chainId: config.EVM_CHAIN_ID,
            usdtAddress: chain.usdtAddress,
            treasuryPrivateKey: treasury.privateKey,
          }),
          logger,
          metrics,
          screening,
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

    const payWith: TestStack['payWith'] = async (pixCopyPaste, payment) => {
      const res = await fetch(`${sandbox.url}/sandbox/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          pix_copy_paste: pixCopyPaste,
          outcome: payment.outcome ?? 'settled',
          ...(payment.amountBrl !== undefined && { amount_brl: payment.amountBrl }),
          ...(payment.notify !== undefined && { notify: payment.notify }),
        }),
      });
      if (res.status !== 202) throw new Error(`sandbox payment answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { event_id: string }).event_id;
    };
    return {
      config,
      apiUrl: apiOrigin,
      sandboxUrl: sandbox.url,
      chain,
      rpcUrl: chain.rpcUrl,
      usdtAddress: chain.usdtAddress,
      sanctionsOracleAddress: chain.sanctionsOracleAddress,
      treasury,
      sandboxWallet,
      webhookTokens: tap?.tokens ?? [],
      db,
      temporal,
      testEnv,
      metrics,
      serviceEnv: env,
      ...(providerProxy ? { providerProxy } : {}),
      async createPartner(name = 'test partner') {
        const { partner, apiKey } = await createPartner(db, name);
        return { partnerId: partner.id, apiKey };
      },
      startApi: startApiHere,
      async startProcess(kind, extra = {}) {
        const port = await freePort();
        const child = new ServiceProcess(kind, await compiledEntry(SERVICE_ENTRIES[kind]), {
          ...env,
          NODE_ENV: 'test',
          LOG_LEVEL: 'info',
          PORT: String(port),
          METRICS_PORT: String(await freePort()),
          WORKER_METRICS_PORT: String(await freePort()),
          ...extra,
        });
        closers.push(() => child.kill());
        if (kind === 'api') await child.waitForReady(`http://127.0.0.1:${extra.PORT ?? port}`);
        else await child.waitForLog('worker started');
        return child;
      },
      startWorker,
      stopWorker,
      async pay(pixCopyPaste, outcome = 'settled') {
        await payWith(pixCopyPaste, { outcome });
      },
      payWith,
      async seedPayouts(partnerId, seeding) {
        const ids = await seedPayouts(db, partnerId, seeding);
        seeded.push(...ids);
        return ids;
      },
      async createPayout(apiKey, body = {}) {
        const receiver = privateKeyToAddress(generatePrivateKey());
        const created = await post(apiOrigin, apiKey, {
          ...VALID_PAYOUT,
          receiver_wallet: receiver,
          ...body,
        });
        if (created.status !== 201)
          throw new Error(`POST /v1/payouts answered ${created.status}: ${created.text}`);
        return { payout: created.json as PayoutResponse, receiver };
      },
      async waitForStatus(apiKey, payoutId, statuses, timeoutMs = 30_000) {
        let last: PayoutResponse | undefined;
        return until(
          () => `payout ${payoutId} to reach ${statuses.join('/')} (last: ${JSON.stringify(last)})`,
          async () => {
            const res = await fetch(`${apiOrigin}/v1/payouts/${payoutId}`, {
              headers: { 'x-api-key': apiKey },
            });
            if (res.status !== 200) return undefined;
            last = (await res.json()) as PayoutResponse;
            return statuses.includes(last.status) ? last : undefined;
          },
          { timeoutMs, intervalMs: 250 },
        );
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
