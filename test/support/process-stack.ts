import { payloadKeysOf } from '../../src/main/wiring';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { createPartner } from '../../src/adapters/db/partners-repo';
import { createPool, type Db } from '../../src/adapters/db/pool';
import type { PayoutResponse } from '../../src/domain/payout';
import { createDataConverter } from '../../src/temporal/data-converter';
import { devServerSearchAttributes } from '../../src/temporal/search-attribute-registry';
import { freePort } from '../../dev/local/infra/ports';
import {
  startTemporalDevServer,
  type TemporalDevServerHandle,
} from '../../dev/local/infra/temporal-dev-server';
import { SERVICE_ENTRIES, serviceEnv as serviceEnvOf } from '../../dev/local/stack-env';
import { startTestChain, type TestChain, type Wallet } from './chain';
import { compiledEntry } from './compiled';
import { startProviderProxy, type ProviderProxy } from './provider-proxy';
import { startSandbox, startWebhookTap } from './sandbox';
import { ServiceProcess } from './service-process';
import { workflowBundle } from './stack';
import { until } from './until';

/**
 * The whole service as separate OS processes, for fault and invariant tests: its own PostgreSQL
 * (a persistent cluster, so it can be restarted on the same data), a Temporal dev server on a SQLite
 * file (restartable on the same file), anvil with the USDT test token, the test sanctions oracle
 * and a funded treasury, the provider sandbox behind a proxy the test can take down, and any number
 * of api and worker processes (`src/main/api.ts`, `src/worker.ts`) that the test SIGKILLs and
 * restarts at will.
 */
export interface ProcessStack {
  db: Db;
  temporal: Client;
  namespace: string;
  chain: TestChain;
  rpcUrl: string;
  usdtAddress: Address;
  treasury: Wallet;
  provider: ProviderProxy;
  sandboxUrl: string;
  /** Every webhook token the sandbox delivered (it delivers through the test, to the main api). */
  webhookTokens: readonly string[];
  /** The api every test talks to first; the sandbox's webhooks go to it. */
  apiUrl: string;
  createPartner(): Promise<{ partnerId: string; apiKey: string }>;
  /** An api process; `port` defaults to the main api's (a restart), `mode` to provider. */
  startApi(opts?: { port?: number; mode?: 'provider' | 'treasury' }): Promise<ApiProcess>;
  /** A worker process; `env` over the services' (e.g. another build id or workflow bundle). */
  startWorker(env?: Record<string, string>): Promise<ServiceProcess>;
  /**
   * Stops the Temporal dev server (SIGTERM: a clean stop; SIGKILL: a crash, nothing flushed), runs
   * `whileDown`, and starts it again on the same SQLite file.
   */
  restartTemporal(whileDown?: () => Promise<void>, signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /**
   * Stops PostgreSQL (SIGTERM: fast shutdown; SIGKILL: the postmaster and every backend killed at
   * once, as a crashed host or an OOM-killed container, so the restart runs crash recovery), runs
   * `whileDown`, and starts it again on the same data directory.
   */
  restartPostgres(whileDown?: () => Promise<void>, signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  pay(pixCopyPaste: string, outcome?: 'settled' | 'settlement_failed'): Promise<void>;
  waitForStatus(
    apiKey: string,
    payoutId: string,
    statuses: readonly string[],
    timeoutMs?: number,
  ): Promise<PayoutResponse>;
  /** Every process started so far (for error output when a test fails). */
  processes: ServiceProcess[];
  /** The environment the api and worker processes get (Temporal address, keys, ...), for other tools. */
  serviceEnv: Readonly<Record<string, string>>;
  close(): Promise<void>;
}

export interface ApiProcess {
  url: string;
  port: number;
  process: ServiceProcess;
}

const HOST = '127.0.0.1';

export interface ProcessStackOptions {
  /** Service env over the stack's. */
  env?: Record<string, string>;
  /**
   * The Temporal server's default workflow task timeout ("4s"; the server's own default is 10 s). The
   * service sets none of its own, so this is the time a task a SIGKILLed worker had taken waits before
   * the server hands it to another worker: shorter, a test that kills workers waits less for the same
   * recovery.
   */
  workflowTaskTimeout?: string;
}

export async function startProcessStack(opts: ProcessStackOptions = {}): Promise<ProcessStack> {
  const closers: (() => Promise<unknown>)[] = [];
  const processes: ServiceProcess[] = [];
  const close = async () => {
    for (const p of processes) await p.kill().catch(() => {});
    for (const c of closers.reverse()) await c().catch(() => {});
  };
  try {
    const tempDir = await mkdtemp(path.join(os.tmpdir(), 'payouts-faults-'));
    // The PostgreSQL server runs as the `postgres` user when we are root: it must enter the directory.
    await chmod(tempDir, 0o755);
    closers.push(() => rm(tempDir, { recursive: true, force: true }));

    // PostgreSQL: persistent, so a restart finds the same data.
    const pgPort = await freePort();
    const pgDir = path.join(tempDir, 'pg');
    let postgres = await startPostgres(pgDir, pgPort);
    closers.push(() => postgres.kill('SIGTERM'));
    const databaseUrl = `postgres://postgres:password@${HOST}:${pgPort}/payouts`;
    const db = createPool(databaseUrl, 5);
    closers.push(() => db.end());

    // Temporal on a SQLite file, in the service's own namespace.
    const namespace = 'payouts';
    const temporalPort = await freePort();
    const temporalOpts = {
      port: temporalPort,
      dbFile: path.join(tempDir, 'temporal.sqlite'),
      namespace,
      searchAttributes: devServerSearchAttributes(),
      extraArgs: opts.workflowTaskTimeout
        ? ['--dynamic-config-value', `history.defaultWorkflowTaskTimeout="${opts.workflowTaskTimeout}"`]
        : [],
    };
    let temporalServer: TemporalDevServerHandle = await startTemporalDevServer(temporalOpts);
    closers.push(() => temporalServer.stop());
    const payloadKey = randomBytes(32).toString('base64');
    const connection = await Connection.connect({ address: temporalServer.address });
    closers.push(() => connection.close());
    const temporal = new Client({
      connection,
      namespace,
      dataConverter: createDataConverter(payloadKeysOf({ PAYLOAD_ENCRYPTION_KEY: payloadKey })),
    });

    const treasuryKey = generatePrivateKey();
    const treasury = { address: privateKeyToAddress(treasuryKey), privateKey: treasuryKey };
    const sandboxWalletKey = generatePrivateKey();
    const chain = await startTestChain({
      funded: [
        { wallet: privateKeyToAddress(sandboxWalletKey), usdtUnits: 1_000_000_000_000n },
        { wallet: treasury.address, usdtUnits: 1_000_000_000_000n },
      ],
    });
    closers.push(() => chain.stop());

    const apiPort = await freePort();
    const apiUrl = `http://${HOST}:${apiPort}`;
    // The sandbox's webhooks pass through the test, which keeps their tokens and forwards them.
    const tap = await startWebhookTap(apiUrl);
    closers.push(() => tap.close());
    const sandbox = await startSandbox({
      chain,
      walletKey: sandboxWalletKey,
      webhookUrl: `${tap.url}/webhooks/sandbox`,
    });
    closers.push(() => sandbox.close());
    const sandboxUrl = sandbox.url;
    const provider = await startProviderProxy(sandboxUrl, await freePort());
    closers.push(() => provider.close());

    // Workers load one prebuilt workflow bundle (WORKFLOW_BUNDLE_PATH) instead of each running webpack.
    const bundlePath = path.join(tempDir, 'workflow-bundle.js');
    await writeFile(bundlePath, (await workflowBundle()).code);

    const serviceEnv: Record<string, string> = {
      ...serviceEnvOf({
        databaseUrl,
        temporal: { address: temporalServer.address, namespace, taskQueue: 'payouts' },
        providerUrl: provider.url,
        chain,
        treasuryKey: treasury.privateKey,
        payloadKey,
      }),
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      DATABASE_POOL_SIZE: '5',
      PROVIDER_TIMEOUT_MS: '2000',
      WORKFLOW_BUNDLE_PATH: bundlePath,
      // Storms come from one loopback address; the limits are not what these tests are about.
      POST_RATE_LIMIT_PER_MINUTE: '100000',
      READ_RATE_LIMIT_PER_MINUTE: '100000',
      ...opts.env,
    };

    const stack: ProcessStack = {
      db,
      temporal,
      namespace,
      chain,
      rpcUrl: chain.rpcUrl,
      usdtAddress: chain.usdtAddress,
      treasury,
      provider,
      sandboxUrl,
      webhookTokens: tap.tokens,
      apiUrl,
      processes,
      async createPartner() {
        const { partner, apiKey } = await createPartner(db, 'fault test partner');
        return { partnerId: partner.id, apiKey };
      },
      async startApi({ port = apiPort, mode = 'provider' } = {}) {
        const api = new ServiceProcess(`api:${port}`, await compiledEntry(SERVICE_ENTRIES.api), {
          ...serviceEnv,
          SETTLEMENT_MODE: mode,
          PORT: String(port),
          METRICS_PORT: String(await freePort()),
        });
        processes.push(api);
        const url = `http://${HOST}:${port}`;
        await api.waitForReady(url);
        return { url, port, process: api };
      },
      serviceEnv,
      async startWorker(env = {}) {
        const build = env.TEMPORAL_WORKER_BUILD_ID;
        const worker = new ServiceProcess(
          build ? `worker:${build}` : 'worker',
          await compiledEntry(SERVICE_ENTRIES.worker),
          {
            ...serviceEnv,
            WORKER_METRICS_PORT: String(await freePort()),
            ...env,
          },
        );
        processes.push(worker);
        await worker.waitForLog('worker started');
        return worker;
      },
      async restartTemporal(whileDown, signal = 'SIGTERM') {
        if (signal === 'SIGKILL' && temporalServer.pid !== undefined) {
          process.kill(temporalServer.pid, 'SIGKILL');
          await temporalServer.exited;
        } else {
          await temporalServer.stop();
        }
        await whileDown?.();
        temporalServer = await startTemporalDevServer(temporalOpts);
      },
      async restartPostgres(whileDown, signal = 'SIGTERM') {
        if (signal === 'SIGKILL') {
          const postmaster = Number(/^postmaster (\d+)$/m.exec(postgres.output.join('\n'))?.[1]);
          if (!postmaster)
            throw new Error(`PostgreSQL wrapper printed no postmaster pid:\n${postgres.tail()}`);
          // Every server process at once, backends included, listed before any dies (a dead
          // postmaster's children are re-parented and could no longer be found by it).
          const tree = [postmaster, ...(await childPids(postmaster))];
          for (const pid of tree) process.kill(pid, 'SIGKILL');
          await until('the killed PostgreSQL processes gone', async () =>
            (await Promise.all(tree.map(isAlive))).some(Boolean) ? undefined : true,
          );
          // The wrapper reaps the postmaster: until then its pid exists (a zombie), and the next
          // postmaster takes the lock file's pid for a server still running. Then the wrapper goes.
          await until('the killed postmaster reaped', async () =>
            (await readFile(`/proc/${postmaster}/stat`, 'utf8').catch(() => '')) === '' ? true : undefined,
          );
          await postgres.kill('SIGKILL');
        } else {
          await postgres.kill('SIGTERM');
        }
        await whileDown?.();
        postgres = await startPostgres(pgDir, pgPort);
      },
      async pay(pixCopyPaste, outcome = 'settled') {
        const res = await fetch(`${sandboxUrl}/sandbox/payments`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ pix_copy_paste: pixCopyPaste, outcome }),
        });
        if (res.status !== 202)
          throw new Error(`sandbox payment answered ${res.status}: ${await res.text()}`);
      },
      async waitForStatus(apiKey, payoutId, statuses, timeoutMs = 90_000) {
        let last: unknown;
        return until(
          () => `payout ${payoutId} to reach ${statuses.join('/')} (last: ${JSON.stringify(last)})`,
          async () => {
            const res = await fetch(`${apiUrl}/v1/payouts/${payoutId}`, { headers: { 'x-api-key': apiKey } });
            last = await res.json();
            return res.status === 200 && statuses.includes((last as PayoutResponse).status)
              ? (last as PayoutResponse)
              : undefined;
          },
          // The api may be restarting.
          { timeoutMs, intervalMs: 200, retryErrors: true },
        );
      },
      close,
    };
    return stack;
  } catch (err) {
    await close();
    throw err;
  }
}

async function startPostgres(dataDir: string, port: number): Promise<ServiceProcess> {
  const pg = new ServiceProcess('postgres', 'test/support/postgres-server.ts', {}, [dataDir, String(port)]);
  await until(
    () => `PostgreSQL to start:\n${pg.tail()}`,
    () => {
      if (pg.output.some((line) => line.startsWith('ready '))) return true;
      if (!pg.running) throw new Error(`PostgreSQL did not start:\n${pg.tail()}`);
      return undefined;
    },
  );
  return pg;
}

/** Direct children of `pid`, from /proc (Linux). */
async function childPids(pid: number): Promise<number[]> {
  const children: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so parse after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid === pid) children.push(Number(entry));
  }
  return children;
}

/** Still running (a zombie counts as gone: it holds no port, file or shared memory). */
async function isAlive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
}
