import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
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
import { ensureLocalContracts } from '../../dev/local/local-contracts';
import { anvilAccount, startAnvil } from '../../dev/local/infra/anvil';
import { freePort } from '../../dev/local/infra/ports';
import {
  startTemporalDevServer,
  type TemporalDevServerHandle,
} from '../../dev/local/infra/temporal-dev-server';
import { buildSandboxApp } from '../../dev/sandbox/app';
import { loadSandboxConfig } from '../../dev/sandbox/config';
import { startProviderProxy, type ProviderProxy } from './provider-proxy';
import { ServiceProcess } from './service-process';
import { workflowBundle } from './stack';
import { payloadKeysOf } from '../../src/main/wiring';

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
  rpcUrl: string;
  usdtAddress: Address;
  /** The test sanctions oracle (owner: the anvil deployer; see test/support/screening.ts to change its list). */
  sanctionsOracleAddress: Address;
  treasury: { address: Address; privateKey: `0x${string}` };
  provider: ProviderProxy;
  sandboxUrl: string;
  /** Every webhook token the sandbox delivered (it delivers through the test, to the main api). */
  webhookTokens: string[];
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

export async function startProcessStack(opts: { env?: Record<string, string> } = {}): Promise<ProcessStack> {
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

    const anvil = await startAnvil({ port: await freePort(), chainId: 42161 });
    closers.push(() => anvil.stop());
    const treasuryKey = generatePrivateKey();
    const treasury = { address: privateKeyToAddress(treasuryKey), privateKey: treasuryKey };
    await fetch(anvil.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'anvil_setBalance',
        params: [treasury.address, '0x56BC75E2D63100000'],
      }),
    });
    const { usdtAddress, sanctionsOracleAddress } = await ensureLocalContracts(anvil.rpcUrl, {
      mints: [
        { to: anvilAccount('provider-sandbox').address, units: 1_000_000_000_000n },
        { to: treasury.address, units: 1_000_000_000_000n },
      ],
    });

    const apiPort = await freePort();
    const apiUrl = `http://${HOST}:${apiPort}`;
    const sandboxPort = await freePort();
    // The sandbox's webhooks pass through the test, which keeps their tokens and forwards them.
    const webhookTokens: string[] = [];
    const tap = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        const token = (JSON.parse(body) as { token?: string }).token;
        if (token && !webhookTokens.includes(token)) webhookTokens.push(token);
        fetch(`${apiUrl}${req.url}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        })
          .then(async (r) => {
            res.writeHead(r.status, { 'content-type': 'application/json' });
            res.end(await r.text());
          })
          .catch(() => res.destroy());
      });
    });
    const tapPort = await freePort();
    await new Promise<void>((resolve) => tap.listen(tapPort, HOST, resolve));
    closers.push(() => new Promise((resolve) => tap.close(resolve)));
    const sandbox = buildSandboxApp(
      loadSandboxConfig({
        SANDBOX_PORT: String(sandboxPort),
        SANDBOX_WEBHOOK_URL: `http://${HOST}:${tapPort}/webhooks/sandbox`,
        SANDBOX_EVM_RPC_URL: anvil.rpcUrl,
        SANDBOX_USDT_ADDRESS: usdtAddress,
        SANDBOX_WALLET_PRIVATE_KEY: anvilAccount('provider-sandbox').privateKey,
        SANDBOX_LOG_LEVEL: 'silent',
      }),
      { webhook: { initialDelayMs: 100, maxDelayMs: 1_000 } },
    );
    await sandbox.listen({ host: HOST, port: sandboxPort });
    closers.push(() => sandbox.close());
    const sandboxUrl = `http://${HOST}:${sandboxPort}`;
    const provider = await startProviderProxy(sandboxUrl, await freePort());
    closers.push(() => provider.close());

    // Workers load one prebuilt workflow bundle (WORKFLOW_BUNDLE_PATH) instead of each running webpack.
    const bundlePath = path.join(tempDir, 'workflow-bundle.js');
    await writeFile(bundlePath, (await workflowBundle()).code);

    const serviceEnv: Record<string, string> = {
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      DATABASE_URL: databaseUrl,
      DATABASE_POOL_SIZE: '5',
      TEMPORAL_ADDRESS: temporalServer.address,
      TEMPORAL_NAMESPACE: namespace,
      TEMPORAL_TASK_QUEUE: 'payouts',
      PROVIDER_API_URL: provider.url,
      PROVIDER_TIMEOUT_MS: '2000',
      EVM_RPC_URL: anvil.rpcUrl,
      USDT_CONTRACT_ADDRESS: usdtAddress,
      SANCTIONS_ORACLE_ADDRESS: sanctionsOracleAddress,
      TREASURY_PRIVATE_KEY: treasury.privateKey,
      PAYLOAD_ENCRYPTION_KEY: payloadKey,
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
      rpcUrl: anvil.rpcUrl,
      usdtAddress,
      sanctionsOracleAddress,
      treasury,
      provider,
      sandboxUrl,
      webhookTokens,
      apiUrl,
      processes,
      async createPartner() {
        const { partner, apiKey } = await createPartner(db, 'fault test partner');
        return { partnerId: partner.id, apiKey };
      },
      async startApi({ port = apiPort, mode = 'provider' } = {}) {
        const api = new ServiceProcess(`api:${port}`, 'src/main/api.ts', {
          ...serviceEnv,
          SETTLEMENT_MODE: mode,
          PORT: String(port),
          METRICS_PORT: String(await freePort()),
        });
        processes.push(api);
        const url = `http://${HOST}:${port}`;
        await waitForReady(url, api);
        return { url, port, process: api };
      },
      serviceEnv,
      async startWorker(env = {}) {
        const build = env.TEMPORAL_WORKER_BUILD_ID;
        const worker = new ServiceProcess(build ? `worker:${build}` : 'worker', 'src/worker.ts', {
          ...serviceEnv,
          WORKER_METRICS_PORT: String(await freePort()),
          ...env,
        });
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
        const deadline = Date.now() + timeoutMs;
        let last: unknown;
        while (Date.now() < deadline) {
          try {
            const res = await fetch(`${apiUrl}/v1/payouts/${payoutId}`, { headers: { 'x-api-key': apiKey } });
            last = await res.json();
            if (res.status === 200 && statuses.includes((last as PayoutResponse).status)) {
              return last as PayoutResponse;
            }
          } catch (err) {
            last = String(err); // the api may be restarting
          }
          await new Promise((r) => setTimeout(r, 200));
        }
        throw new Error(
          `payout ${payoutId} did not reach ${statuses.join('/')}; last: ${JSON.stringify(last)}`,
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
  const deadline = Date.now() + 60_000;
  while (!pg.output.some((line) => line.startsWith('ready '))) {
    if (!pg.running || Date.now() > deadline) throw new Error(`PostgreSQL did not start:\n${pg.tail()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
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

async function waitForReady(url: string, api: ServiceProcess, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!api.running) break;
    try {
      const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) });
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${api.name} did not become ready:\n${api.tail()}`);
}

/** Polls `probe` until it returns a value (not undefined); for waiting on observable events. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err; // e.g. the database restarting
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ''}`);
}
