import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import * as prettier from 'prettier';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { createPool } from '../../src/adapters/db/pool';
import { loadWorkerConfig } from '../../src/config';
import { screeningOf } from '../../src/main/wiring';
import { startProviderFloor } from './provider-floor';
import { closedLoop, sleep, type Summary } from './stats';
import { renderMarkdown, renderTable, type BenchResult } from './report';
import {
  cpuDuring,
  ensureStack,
  ROOT,
  replicaEnv,
  rssBytes,
  scrapeMetric,
  stackProcesses,
  startReplica,
  waitReady,
  type Stack,
} from './stack';
import { DEV_SERVER_DESCRIPTION, startBenchTemporalServer, temporalModeFromArgs } from './temporal-server';
import { Teardown } from './teardown';

/**
 * `npm run bench`: the service against Temporal's own floor, in one run on one machine. See
 * docs/BENCHMARKS.md for what each figure means; knobs are BENCH_* variables (README, "Benchmark").
 */

const num = (name: string, def: number) => Number(process.env[name] ?? def);
const SECONDS = num('BENCH_SECONDS', 15);
const WARMUP_MS = num('BENCH_WARMUP_SECONDS', 2) * 1000;
const SATURATION_SECONDS = num('BENCH_SATURATION_SECONDS', 8);
const OPEN_PAYOUTS = num('BENCH_OPEN_PAYOUTS', 10_000);
const PAYMENT_CLIENTS = num('BENCH_PAYMENT_CLIENTS', 8);
const PHASES = new Set(
  (process.env.BENCH_PHASES ?? 'compare,get,payment,saturation,open,scale').split(',').map((s) => s.trim()),
);
// --temporal=server: the production Temporal server on PostgreSQL (dev/bench/temporal-server.ts),
// started here; it sets TEMPORAL_ADDRESS before anything connects.
const TEMPORAL_MODE = temporalModeFromArgs(process.argv.slice(2));
const temporalAddress = () => process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
const EVM_RPC_URL = process.env.EVM_RPC_URL ?? 'http://127.0.0.1:8545';
const POLL_MS = num('BENCH_POLL_MS', 25);
const PAYMENTS_PER_CLIENT = num('BENCH_PAYMENTS_PER_CLIENT', 5);

const log = (line: string) => process.stdout.write(`[bench] ${line}\n`);
// What the bench starts, stopped at the end, on a failure and on Ctrl-C.
const teardown = new Teardown(log);
const fmt = (s: Summary) =>
  `n=${s.count} err=${s.errors} ${s.throughput.toFixed(1)}/s p50=${s.p50.toFixed(0)} p95=${s.p95.toFixed(0)} p99=${s.p99.toFixed(0)} ms`;

interface Created {
  id: string;
  pixCopyPaste: string;
}

class Service {
  /** Payouts created and not yet paid, oldest first. */
  readonly pending: Created[] = [];
  readonly completed: string[] = [];
  private next = 0;
  constructor(
    readonly stack: Stack,
    private readonly apiUrls: string[] = [stack.apiUrl],
  ) {}

  withApis(apiUrls: string[]): Service {
    return new Service(this.stack, apiUrls);
  }

  private api(): string {
    this.next = (this.next + 1) % this.apiUrls.length;
    return this.apiUrls[this.next]!;
  }

  async post(): Promise<Created> {
    const res = await fetch(`${this.api()}/v1/payouts`, {
      method: 'POST',
      headers: {
        'x-api-key': this.stack.apiKey,
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
      },
      body: JSON.stringify({
        amount_brl: 100.0,
        receiver_wallet: privateKeyToAddress(generatePrivateKey()),
        pix_key: 'payer@example.com',
        pix_key_type: 'EMAIL',
      }),
    });
    const body = (await res.json()) as { id?: string; pix_copy_paste?: string; error?: string };
    if (res.status !== 201 || !body.id || !body.pix_copy_paste) {
      throw new Error(`POST answered ${res.status}: ${body.error ?? JSON.stringify(body)}`);
    }
    const created = { id: body.id, pixCopyPaste: body.pix_copy_paste };
    this.pending.push(created);
    return created;
  }

  async get(id: string): Promise<{ status: string }> {
    const res = await fetch(`${this.api()}/v1/payouts/${id}`, {
      headers: { 'x-api-key': this.stack.apiKey },
    });
    const body = (await res.json()) as { status?: string; error?: string };
    if (res.status !== 200 || !body.status) throw new Error(`GET answered ${res.status}: ${body.error}`);
    return { status: body.status };
  }

  async pay(pixCopyPaste: string): Promise<void> {
    const res = await fetch(`${this.stack.sandboxUrl}/sandbox/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pix_copy_paste: pixCopyPaste }),
    });
    if (res.status !== 202) throw new Error(`sandbox payment answered ${res.status}: ${await res.text()}`);
  }
}

/** The floor: a bare client and its own tiny worker, on the same Temporal server as the service. */
async function startFloor() {
  const taskQueue = `bench-floor-${process.pid}`;
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const nativeConnection = await NativeConnection.connect({ address: temporalAddress() });
  const worker = await Worker.create({
    connection: nativeConnection,
    taskQueue,
    workflowsPath: require.resolve('./floor.workflow'),
    activities: { noop: async () => {} },
  });
  const running = worker.run();
  const connection = await Connection.connect({ address: temporalAddress() });
  const client = new Client({ connection });
  return {
    run: async () => {
      await client.workflow.execute('floorWorkflow', {
        taskQueue,
        workflowId: `bench-floor-${randomUUID()}`,
      });
    },
    stop: async () => {
      worker.shutdown();
      await running;
      await connection.close();
      await nativeConnection.close();
    },
  };
}

function machine(temporalServer: string) {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    memoryGiB: Number((os.totalmem() / 2 ** 30).toFixed(1)),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    loadAverageAtStart: os.loadavg().map((l) => Number(l.toFixed(2))),
    temporalServer,
    at: new Date().toISOString(),
  };
}

async function main(): Promise<void> {
  teardown.onSignals();
  const temporal = TEMPORAL_MODE === 'server' ? await startBenchTemporalServer(log, teardown) : undefined;
  const result: BenchResult = {
    machine: machine(temporal?.description ?? DEV_SERVER_DESCRIPTION),
    settings: { seconds: SECONDS, warmupSeconds: WARMUP_MS / 1000, openPayouts: OPEN_PAYOUTS },
    compare: [],
    get: [],
    payment: [],
    saturation: [],
  };
  const stack = await ensureStack(log, {
    teardown,
    ...(temporal
      ? { refuseRunning: 'it was not started against the Temporal server of --temporal=server' }
      : {}),
  });
  const service = new Service(stack);
  const floor = await startFloor();
  const screeningDb = createPool(replicaEnv().DATABASE_URL!, 4);
  const screening = screeningOf(
    { ...loadWorkerConfig(replicaEnv()), SCREENING_CACHE_SECONDS: 0 },
    screeningDb,
  );
  const loop = (concurrency: number, op: () => Promise<unknown>, seconds = SECONDS, maxOperations?: number) =>
    closedLoop({ concurrency, durationMs: seconds * 1000, warmupMs: WARMUP_MS, maxOperations }, async () => {
      await op();
    });

  try {
    if (PHASES.has('compare')) {
      for (const c of [1, 16]) {
        const f = await loop(c, floor.run);
        log(`floor      C=${c}: ${fmt(f)}`);
        const p = await loop(c, () => service.post());
        log(`POST       C=${c}: ${fmt(p)}${p.firstError ? ` first error: ${p.firstError}` : ''}`);
        // The screening POST runs before anything is created, alone and uncached: what it adds.
        const s = await loop(c, () => screening.screen(privateKeyToAddress(generatePrivateKey())));
        log(`screening  C=${c}: ${fmt(s)}${s.firstError ? ` first error: ${s.firstError}` : ''}`);
        result.compare.push({ concurrency: c, floor: f, post: p, screening: s });
      }
    }

    // Enough PENDING payouts to read and to pay.
    if (PHASES.has('get') || PHASES.has('payment')) {
      // A POST that times out under load (503) is retried; the partner would do the same.
      let failures = 0;
      while (service.pending.length < 400) {
        await service.post().catch((err: unknown) => {
          if (++failures > 50) throw err;
        });
      }
    }

    if (PHASES.has('get')) {
      const ids = service.pending.map((p) => p.id);
      for (const c of [1, 16]) {
        const g = await loop(c, () => service.get(ids[Math.floor(Math.random() * ids.length)]!));
        log(`GET live   C=${c}: ${fmt(g)}`);
        result.get.push({ kind: 'live', concurrency: c, summary: g });
      }
    }

    if (PHASES.has('payment')) {
      // The provider floor and the service alternate at each concurrency, as the Temporal floor and
      // POST do; the floor's own sandbox and webhook listener live only for this phase.
      const providerFloor = await startProviderFloor({ rpcUrl: EVM_RPC_URL });
      try {
        for (const c of [1, PAYMENT_CLIENTS]) {
          const f = await providerFloor.measure({
            concurrency: c,
            durationMs: SECONDS * 4000,
            maxOperations: Math.max(20, c * PAYMENTS_PER_CLIENT),
          });
          log(
            `provider floor (payment to settlement.completed webhook) C=${c}: ${fmt(f)}${f.firstError ? ` first error: ${f.firstError}` : ''}`,
          );
          (result.providerFloors ??= []).push({ concurrency: c, summary: f });
          if (c === 1) result.providerFloor = f;
          const s = await measurePaymentToCompleted(service, c);
          log(`payment->COMPLETED C=${c}: ${fmt(s)}${s.firstError ? ` first error: ${s.firstError}` : ''}`);
          result.payment.push({ concurrency: c, summary: s });
        }
      } finally {
        await providerFloor.close();
      }
    }

    if (PHASES.has('get') && service.completed.length > 0) {
      const ids = service.completed;
      for (const c of [1, 16]) {
        const g = await loop(c, () => service.get(ids[Math.floor(Math.random() * ids.length)]!));
        log(`GET closed C=${c}: ${fmt(g)}`);
        result.get.push({ kind: 'closed', concurrency: c, summary: g });
      }
    }

    if (PHASES.has('saturation')) {
      let best = { floor: 0, post: 0 };
      for (const c of [1, 2, 4, 8, 16, 32, 64]) {
        const f = await loop(c, floor.run, SATURATION_SECONDS);
        const p = await loop(c, () => service.post(), SATURATION_SECONDS);
        log(`saturation C=${c}: floor ${fmt(f)} | POST ${fmt(p)}`);
        result.saturation.push({ concurrency: c, floor: f, post: p });
        const grew = f.throughput > best.floor * 1.05 || p.throughput > best.post * 1.05;
        best = { floor: Math.max(best.floor, f.throughput), post: Math.max(best.post, p.throughput) };
        if (!grew && c >= 8) break;
      }
    }

    if (PHASES.has('open')) result.open = await measureOpenPayouts(service);
    if (PHASES.has('scale')) result.scaleOut = await measureScaleOut(service, loop);
  } finally {
    await floor.stop();
    await screeningDb.end();
    if (stack.owned) {
      log('stopping the stack the bench started');
      await stack.stop();
    }
    await teardown.run();
  }
  if (teardown.interrupted) return;

  const docs = path.join(ROOT, 'docs');
  mkdirSync(docs, { recursive: true });
  const jsonFile = process.env.BENCH_JSON ?? path.join(docs, 'benchmarks.json');
  // Written as the repository's formatter would, so the lint check passes on a fresh result.
  const formatted = async (file: string, text: string) =>
    prettier.format(text, { ...(await prettier.resolveConfig(file)), filepath: file });
  writeFileSync(jsonFile, await formatted(jsonFile, JSON.stringify(result, null, 2)));
  if (!process.env.BENCH_NO_MARKDOWN) {
    const md = path.join(docs, 'BENCHMARKS.md');
    writeFileSync(md, await formatted(md, renderMarkdown(result, readNotes(md))));
  }
  process.stdout.write(`\n${renderTable(result)}\n`);
  log(`wrote ${jsonFile}${process.env.BENCH_NO_MARKDOWN ? '' : ' and docs/BENCHMARKS.md'}`);
}

/** The hand-written analysis below the generated tables survives a re-run. */
function readNotes(file: string): string {
  try {
    const text = readFileSync(file, 'utf8');
    const at = text.indexOf('<!-- notes -->');
    return at >= 0 ? text.slice(at) : '';
  } catch {
    return '';
  }
}

/** The sandbox's bank pays a PENDING payout; the client polls GET until COMPLETED. */
function measurePaymentToCompleted(service: Service, concurrency: number) {
  // Each payout takes seconds: a bounded number of them, no warm-up (the GET phases warmed up).
  return closedLoop(
    { concurrency, durationMs: SECONDS * 4000, maxOperations: concurrency * PAYMENTS_PER_CLIENT },
    async () => {
      const payout = service.pending.shift() ?? (await service.post());
      const began = performance.now();
      await service.pay(payout.pixCopyPaste);
      for (;;) {
        const { status } = await service.get(payout.id);
        if (status === 'COMPLETED') break;
        if (status === 'FAILED') throw new Error(`payout ${payout.id} FAILED`);
        await sleep(POLL_MS);
      }
      service.completed.push(payout.id);
      return performance.now() - began;
    },
  );
}

async function workerFacts(stack: Stack) {
  const workers = stackProcesses().filter((p) => p.role === 'worker');
  return {
    rssBytes: workers.map((w) => rssBytes(w.pid) ?? 0).reduce((a, b) => a + b, 0),
    stickyCacheSize: await scrapeMetric(stack.workerMetricsUrl, 'temporal_sticky_cache_size'),
    stickyCacheForcedEvictions: await scrapeMetric(
      stack.workerMetricsUrl,
      'temporal_sticky_cache_total_forced_eviction',
    ),
    heapUsedBytes: await scrapeMetric(stack.workerMetricsUrl, 'nodejs_heap_size_used_bytes'),
    maxCachedWorkflows: process.env.WORKER_MAX_CACHED_WORKFLOWS ?? '1000 (service default)',
  };
}

/** A worker holding many open PENDING payouts: its memory, and GET of those payouts. */
async function measureOpenPayouts(service: Service) {
  const before = await workerFacts(service.stack);
  const ids: string[] = [];
  const started = performance.now();
  let lastLog = started;
  const creation = await closedLoop(
    { concurrency: 16, durationMs: 3_600_000, maxOperations: OPEN_PAYOUTS },
    async () => {
      const created = await service.post();
      ids.push(created.id);
      if (performance.now() - lastLog > 30_000) {
        lastLog = performance.now();
        log(`open payouts: ${ids.length}/${OPEN_PAYOUTS} created`);
      }
    },
  );
  log(
    `open payouts: created ${ids.length} in ${((performance.now() - started) / 1000).toFixed(0)} s: ${fmt(creation)}`,
  );
  await sleep(2_000);
  const held = await workerFacts(service.stack);
  const pick = () => ids[Math.floor(Math.random() * ids.length)]!;
  const get = await closedLoop({ concurrency: 16, durationMs: SECONDS * 1000, warmupMs: WARMUP_MS }, () =>
    service.get(pick()).then(() => undefined),
  );
  const after = await workerFacts(service.stack);
  log(
    `open payouts: worker RSS ${(held.rssBytes / 2 ** 20).toFixed(0)} MiB, cache ${held.stickyCacheSize}, GET C=16 ${fmt(get)}`,
  );
  // Oldest first: with a cache smaller than the open payouts, these were evicted and replay.
  const oldest = ids.slice(0, 200);
  let i = 0;
  const cold = await closedLoop(
    { concurrency: 1, durationMs: SECONDS * 1000, maxOperations: oldest.length },
    () => service.get(oldest[i++ % oldest.length]!).then(() => undefined),
  );
  log(`open payouts: GET of the oldest (evicted when the cache is smaller) C=1 ${fmt(cold)}`);
  return { created: ids.length, creation, before, held, get, after, oldestGet: cold };
}

/** Two api and two worker processes against the same Temporal, PostgreSQL and chain. */
async function measureScaleOut(
  service: Service,
  loop: (c: number, op: () => Promise<unknown>, seconds?: number) => Promise<Summary>,
) {
  const single: Record<number, { summary: Summary; cores: Record<string, number> }> = {};
  for (const c of [16, 32]) {
    const { result, cores } = await cpuDuring(() => loop(c, () => service.post()));
    single[c] = { summary: result, cores };
    log(`one api + one worker  C=${c}: ${fmt(result)} cpu ${JSON.stringify(roundCores(cores))}`);
  }
  const api = startReplica('api', 1);
  const worker = startReplica('worker', 1);
  try {
    await waitReady('http://127.0.0.1:3001/readyz', api);
    await waitReady('http://127.0.0.1:9481/metrics', worker);
    await sleep(3_000);
    const both = service.withApis([service.stack.apiUrl, 'http://127.0.0.1:3001']);
    const double: typeof single = {};
    for (const c of [16, 32]) {
      const { result, cores } = await cpuDuring(() => loop(c, () => both.post()));
      double[c] = { summary: result, cores };
      log(`two api + two workers C=${c}: ${fmt(result)} cpu ${JSON.stringify(roundCores(cores))}`);
    }
    return { single, double };
  } finally {
    await Promise.all([api.stop(), worker.stop()]);
  }
}

function roundCores(cores: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(cores).map(([k, v]) => [k, Number(v.toFixed(2))]));
}

main().catch(async (err: unknown) => {
  // After a Ctrl-C, what fails is only what the teardown stopped under the run.
  if (!teardown.interrupted) {
    process.stderr.write(
      `[bench] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
  }
  await teardown.run();
  process.exit(1);
});
