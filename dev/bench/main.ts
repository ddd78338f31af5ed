import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { Client, Connection, WithStartWorkflowOperation } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import * as prettier from 'prettier';
import { getAddress, type Address } from 'viem';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { loadWorkerConfig } from '../../src/config';
import { screeningOf } from '../../src/main/wiring';
import { medianTimeline, timelineOf, type PaidPayout } from './breakdown';
import { costPerPayout } from './cost';
import { withWorkflowThreads } from '../../src/temporal/workflow-threads';
import { BenchHttp } from './http-client';
import { readyUpdate, stateQuery } from './floor.workflow';
import { startProviderFloor } from './provider-floor';
import type { ManagedProcess } from '../local/infra/processes';
import { closedLoop, sleep, type Summary } from './stats';
import { renderMarkdown, renderTable, type BenchResult } from './report';
import {
  cpuMeter,
  ensureStack,
  ROOT,
  replicaEnv,
  rssBytes,
  metricSum,
  scrapeMetric,
  stackProcesses,
  startReplica,
  waitReady,
  type Stack,
} from './stack';
import {
  DEV_SERVER_DESCRIPTION,
  startBenchTemporalServer,
  temporalModeFromArgs,
  type BenchTemporalServer,
} from './temporal-server';
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
  (process.env.BENCH_PHASES ?? 'compare,get,payment,cost,saturation,open,scale')
    .split(',')
    .map((s) => s.trim()),
);
const NAMESPACE = process.env.TEMPORAL_NAMESPACE ?? 'payouts';
// --temporal=server: the production Temporal server on PostgreSQL (dev/bench/temporal-server.ts),
// started here; it sets TEMPORAL_ADDRESS before anything connects.
const TEMPORAL_MODE = temporalModeFromArgs(process.argv.slice(2));
const temporalAddress = () => process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
const EVM_RPC_URL = process.env.EVM_RPC_URL ?? 'http://127.0.0.1:8545';
const POLL_MS = num('BENCH_POLL_MS', 25);
const PAYMENTS_PER_CLIENT = num('BENCH_PAYMENTS_PER_CLIENT', 5);

/** Which Temporal the run measures: the CLI dev server `npm start` runs, or the production server. */
const TEMPORAL_KIND = TEMPORAL_MODE;
const RESULT_FILES = { dev: 'benchmarks.json', server: 'benchmarks-temporal-server.json' } as const;
const SECTION_TITLES = {
  dev: 'Temporal CLI dev server (what `npm start` runs)',
  server: 'Temporal server (what production runs)',
} as const;

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
    private readonly http: BenchHttp,
    private readonly apiUrls: string[] = [stack.apiUrl],
  ) {}

  withApis(apiUrls: string[]): Service {
    return new Service(this.stack, this.http, apiUrls);
  }

  private api(): string {
    this.next = (this.next + 1) % this.apiUrls.length;
    return this.apiUrls[this.next]!;
  }

  async post(): Promise<Created> {
    const res = await this.http.call(
      'POST',
      `${this.api()}/v1/payouts`,
      { 'x-api-key': this.stack.apiKey, 'idempotency-key': randomUUID() },
      {
        amount_brl: 100.0,
        receiver_wallet: freshWallet(),
        pix_key: 'payer@example.com',
        pix_key_type: 'EMAIL',
      },
    );
    const body = (res.body ?? {}) as { id?: string; pix_copy_paste?: string; error?: string };
    if (res.status !== 201 || !body.id || !body.pix_copy_paste) {
      throw new Error(`POST answered ${res.status}: ${body.error ?? res.text}`);
    }
    const created = { id: body.id, pixCopyPaste: body.pix_copy_paste };
    this.pending.push(created);
    return created;
  }

  async get(id: string): Promise<{ status: string }> {
    const res = await this.http.call('GET', `${this.api()}/v1/payouts/${id}`, {
      'x-api-key': this.stack.apiKey,
    });
    const body = (res.body ?? {}) as { status?: string; error?: string };
    if (res.status !== 200 || !body.status) throw new Error(`GET answered ${res.status}: ${body.error}`);
    return { status: body.status };
  }

  async pay(pixCopyPaste: string): Promise<void> {
    const res = await this.http.call(
      'POST',
      `${this.stack.sandboxUrl}/sandbox/payments`,
      {},
      {
        pix_copy_paste: pixCopyPaste,
      },
    );
    if (res.status !== 202) throw new Error(`sandbox payment answered ${res.status}: ${res.text}`);
  }
}

/**
 * A receiver no payout has used: 20 random bytes, checksummed. Not a key pair: deriving one costs the
 * client a millisecond of CPU a POST, on the cores the service is measured on.
 */
function freshWallet(): Address {
  return getAddress(`0x${randomBytes(20).toString('hex')}`);
}

/**
 * The PENDING writes the service's worker has made so far: one local `recordPayout` in the first task
 * of every payout (its metric `temporal_local_activity_succeed_endtoend_latency_count`).
 */
async function firstTaskWrites(workerMetricsUrl: string): Promise<number> {
  // One reading: the count, or none yet (the SDK exports a counter only once it has a value) when the
  // worker's own Temporal metrics are there; no answer or no Temporal metrics at all is an error.
  const text = await fetch(workerMetricsUrl, { signal: AbortSignal.timeout(5_000) })
    .then((res) => (res.ok ? res.text() : undefined))
    .catch(() => undefined);
  if (text === undefined || !/^temporal_/m.test(text))
    throw new Error(`cannot read the worker's Temporal metrics at ${workerMetricsUrl}`);
  return (
    metricSum(
      text,
      'temporal_local_activity_succeed_endtoend_latency_count',
      'activity_type="recordPayout"',
    ) ?? 0
  );
}

/**
 * How long the service's worker still needed, once a load stopped, to run the first task of the
 * `payouts` POST created since `writesBefore` (firstTaskWrites then): POST answers before it (D81).
 * Counted on the worker itself, read every 50 ms: Temporal's backlog statistic moves in steps of
 * seconds and leaves out the tasks a worker holds.
 */
async function workerCatchUp(
  workerMetricsUrl: string,
  writesBefore: number,
  payouts: number,
  timeoutMs = 120_000,
): Promise<number> {
  const began = performance.now();
  while ((await firstTaskWrites(workerMetricsUrl)) - writesBefore < payouts) {
    if (performance.now() - began > timeoutMs)
      throw new Error(`the worker did not run ${payouts} first tasks within ${timeoutMs} ms`);
    await sleep(50);
  }
  return performance.now() - began;
}

/**
 * The floors: a bare client and its own tiny worker (no payload codec, no database), on the same
 * Temporal server as the service. `run` is a workflow with one no-op activity; `startWithUpdate` is
 * the least a POST can cost (update-with-start of a workflow that stays open, its update answering
 * at once); `query` is the least a live GET can cost (a query of one of those open workflows).
 */
async function startFloor() {
  const taskQueue = `bench-floor-${process.pid}`;
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const nativeConnection = await NativeConnection.connect({ address: temporalAddress() });
  // Its workflow threads as the service's worker has them (no per-promise stack capture, D82).
  const worker = await withWorkflowThreads({ stackTraces: false }, () =>
    Worker.create({
      connection: nativeConnection,
      namespace: NAMESPACE,
      taskQueue,
      workflowsPath: require.resolve('./floor.workflow'),
      activities: { noop: async () => {} },
      maxCachedWorkflows: 10_000,
    }),
  );
  // A floor worker that fails is reported, and the floors it would serve then fail loudly.
  const running = worker.run().catch((err: unknown) => log(`floor worker stopped: ${String(err)}`));
  const connection = await Connection.connect({ address: temporalAddress() });
  const client = new Client({ connection, namespace: NAMESPACE });
  const open: string[] = [];
  return {
    client,
    run: async () => {
      await client.workflow.execute('floorWorkflow', {
        taskQueue,
        workflowId: `bench-floor-${randomUUID()}`,
      });
    },
    startWithUpdate: async () => {
      const workflowId = `bench-floor-open-${randomUUID()}`;
      const startWorkflowOperation = new WithStartWorkflowOperation('openFloorWorkflow', {
        taskQueue,
        workflowId,
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowExecutionTimeout: '15 minutes',
      });
      const answer = await client.workflow.executeUpdateWithStart(readyUpdate, { startWorkflowOperation });
      if (answer !== 'ready') throw new Error(`floor update answered ${answer}`);
      open.push(workflowId);
    },
    query: async () => {
      if (open.length === 0) throw new Error('no open floor workflow to query');
      const id = open[Math.floor(Math.random() * open.length)]!;
      const state = await client.workflow.getHandle(id).query(stateQuery);
      if (state !== 'open') throw new Error(`floor query answered ${state}`);
    },
    stop: async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
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
    machine: {
      ...machine(temporal?.description ?? DEV_SERVER_DESCRIPTION),
      ...(temporal ? { historyShards: temporal.numHistoryShards } : {}),
    },
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
  const http = new BenchHttp();
  teardown.add('bench http client', async () => http.close());
  const service = new Service(stack, http);
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
      for (const c of [1, 16, 64]) {
        const f = await loop(c, floor.run);
        log(`floor (workflow + activity) C=${c}: ${fmt(f)}`);
        const u = await loop(c, floor.startWithUpdate);
        log(`floor (update-with-start)   C=${c}: ${fmt(u)}`);
        const writesBefore = await firstTaskWrites(stack.workerMetricsUrl);
        const postedBefore = service.pending.length;
        const p = await loop(c, () => service.post());
        // POST answers before the worker runs the payout's first task (D81): the window's throughput
        // counts only if the worker kept up. What it had not done yet is waited for and counted in.
        const drainMs = await workerCatchUp(
          stack.workerMetricsUrl,
          writesBefore,
          service.pending.length - postedBefore,
        );
        const postSustained = (p.count * 1000) / (SECONDS * 1000 + drainMs);
        log(
          `POST                        C=${c}: ${fmt(p)}${p.firstError ? ` first error: ${p.firstError}` : ''}; ` +
            `worker backlog drained in ${drainMs.toFixed(0)} ms, sustained ${postSustained.toFixed(1)}/s`,
        );
        // The screening POST runs before anything is created, alone and uncached: what it adds.
        const s = c > 16 ? undefined : await loop(c, () => screening.screen(freshWallet()));
        if (s) log(`screening  C=${c}: ${fmt(s)}${s.firstError ? ` first error: ${s.firstError}` : ''}`);
        result.compare.push({
          concurrency: c,
          floor: f,
          updateFloor: u,
          post: p,
          postBacklog: { drainMs, sustainedThroughput: postSustained },
          screening: s,
        });
      }
    }

    // Enough PENDING payouts to read and to pay.
    if (PHASES.has('get') || PHASES.has('payment')) {
      // A POST that times out under load (503) is retried; the partner would do the same.
      let failures = 0;
      const writesBefore = await firstTaskWrites(stack.workerMetricsUrl);
      const postedBefore = service.pending.length;
      while (service.pending.length < 400) {
        await service.post().catch((err: unknown) => {
          if (++failures > 50) throw err;
        });
      }
      // Their first tasks run after POST answered (D81): done before anything is measured on them.
      await workerCatchUp(stack.workerMetricsUrl, writesBefore, service.pending.length - postedBefore);
    }

    if (PHASES.has('get')) {
      const ids = service.pending.map((p) => p.id);
      // The query floor needs open floor workflows to query: a few, if the compare phase made none.
      for (let i = 0; i < 50 && !PHASES.has('compare'); i += 1) await floor.startWithUpdate();
      for (const c of [1, 16]) {
        const q = await loop(c, floor.query);
        log(`floor (query)  C=${c}: ${fmt(q)}`);
        const g = await loop(c, () => service.get(ids[Math.floor(Math.random() * ids.length)]!));
        log(`GET live       C=${c}: ${fmt(g)}`);
        result.get.push({ kind: 'live', concurrency: c, summary: g, floor: q });
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
          const paid: PaidPayout[] = [];
          const s = await measurePaymentToCompleted(service, c, paid);
          log(`payment->COMPLETED C=${c}: ${fmt(s)}${s.firstError ? ` first error: ${s.firstError}` : ''}`);
          result.payment.push({ concurrency: c, summary: s });
          const timelines = await Promise.all(paid.map((p) => timelineOf(floor.client, screeningDb, p)));
          const breakdown = { concurrency: c, ...medianTimeline(timelines) };
          (result.paymentBreakdowns ??= []).push(breakdown);
          if (c === 1) result.paymentBreakdown = breakdown;
          for (const step of breakdown.steps) log(`  ${step.ms.toFixed(0).padStart(5)} ms  ${step.step}`);
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
        const writesBefore = await firstTaskWrites(stack.workerMetricsUrl);
        const postedBefore = service.pending.length;
        const posted = await loop(c, () => service.post(), SATURATION_SECONDS);
        // Counted in as in the compare phase, and never left to slow the next floor down.
        const satDrainMs = await workerCatchUp(
          stack.workerMetricsUrl,
          writesBefore,
          service.pending.length - postedBefore,
        );
        const p = { ...posted, throughput: (posted.count * 1000) / (SATURATION_SECONDS * 1000 + satDrainMs) };
        log(
          `saturation C=${c}: floor ${fmt(f)} | POST ${fmt(p)} (backlog drained in ${satDrainMs.toFixed(0)} ms, counted in)`,
        );
        result.saturation.push({ concurrency: c, floor: f, post: p });
        const grew = f.throughput > best.floor * 1.05 || p.throughput > best.post * 1.05;
        best = { floor: Math.max(best.floor, f.throughput), post: Math.max(best.post, p.throughput) };
        if (!grew && c >= 8) break;
      }
    }

    if (PHASES.has('cost')) {
      const cost = (result.cost = await measureCost(service, floor.client, screeningDb, temporal));
      log(
        `cost per payout: ${JSON.stringify(cost.temporal.total)}; service PostgreSQL ${JSON.stringify(cost.servicePostgres)}`,
      );
    }

    if (PHASES.has('open')) result.open = await measureOpenPayouts(service);
    if (PHASES.has('scale')) {
      const persistence = temporal
        ? async () => {
            const sample = await temporal.persistenceCounters();
            const t = Object.entries(sample.databases).filter(([name]) => name.startsWith('temporal'));
            return { transactions: t.reduce((sum, [, c]) => sum + c.transactions, 0) };
          }
        : undefined;
      result.scaling = await measureScaling(service, screeningDb, persistence);
    }
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
  const jsonFile = process.env.BENCH_JSON ?? path.join(docs, RESULT_FILES[TEMPORAL_KIND]);
  // Written as the repository's formatter would, so the lint check passes on a fresh result.
  const formatted = async (file: string, text: string) =>
    prettier.format(text, { ...(await prettier.resolveConfig(file)), filepath: file });
  writeFileSync(jsonFile, await formatted(jsonFile, JSON.stringify(result, null, 2)));
  if (!process.env.BENCH_NO_MARKDOWN) {
    const md = path.join(docs, 'BENCHMARKS.md');
    // This run's section, and the other server's from its last run, so both tables stay side by side.
    const runs = (['dev', 'server'] as const).flatMap((kind) => {
      const file = path.join(docs, RESULT_FILES[kind]);
      const run = kind === TEMPORAL_KIND ? result : readResult(file);
      return run ? [{ title: SECTION_TITLES[kind], file: path.relative(ROOT, file), result: run }] : [];
    });
    writeFileSync(md, await formatted(md, renderMarkdown(runs, readNotes(md))));
  }
  process.stdout.write(`\n${renderTable(result)}\n`);
  log(`wrote ${jsonFile}${process.env.BENCH_NO_MARKDOWN ? '' : ' and docs/BENCHMARKS.md'}`);
}

function readResult(file: string): BenchResult | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as BenchResult;
  } catch {
    return undefined;
  }
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
function measurePaymentToCompleted(service: Service, concurrency: number, paid: PaidPayout[] = []) {
  // Each payout takes seconds: a bounded number of them, no warm-up (the GET phases warmed up). Up to
  // 20 at C=1, as the provider floor's, in the time allowed: the C=1 median (the target's) of five moved
  // by 60 ms between runs.
  return closedLoop(
    {
      concurrency,
      durationMs: SECONDS * 4000,
      maxOperations: Math.max(20, concurrency * PAYMENTS_PER_CLIENT),
    },
    async () => {
      // The newest: an old one may have left the worker's cache, and its payment would include a replay.
      const payout = service.pending.pop() ?? (await service.post());
      const paidAt = Date.now();
      const began = performance.now();
      await service.pay(payout.pixCopyPaste);
      for (;;) {
        const { status } = await service.get(payout.id);
        if (status === 'COMPLETED') break;
        if (status === 'FAILED') throw new Error(`payout ${payout.id} FAILED`);
        await sleep(POLL_MS);
      }
      service.completed.push(payout.id);
      paid.push({ payoutId: payout.id, paidAt, seenAt: Date.now() });
      return performance.now() - began;
    },
  );
}

/** The service database's transaction and row counters (pg_stat_database). */
async function databaseCounters(
  db: Db,
): Promise<{ transactions: number; rowsWritten: number; rowsRead: number }> {
  const { rows } = await db.query<{ x: string; w: string; r: string }>(
    `SELECT xact_commit + xact_rollback AS x, tup_inserted + tup_updated + tup_deleted AS w,
            tup_returned + tup_fetched AS r
       FROM pg_stat_database WHERE datname = current_database()`,
  );
  const row = rows[0]!;
  return { transactions: Number(row.x), rowsWritten: Number(row.w), rowsRead: Number(row.r) };
}

/**
 * What a payout costs, end to end (POST, payment, COMPLETED, its callback): Temporal's work from the
 * histories (cost.ts), and the service's own PostgreSQL transactions. Payouts run one at a time; the
 * bench watches for COMPLETED in the read model every 100 ms and takes its own reads out of the count.
 */
async function measureCost(service: Service, client: Client, db: Db, temporal?: BenchTemporalServer) {
  const payouts = num('BENCH_COST_PAYOUTS', 20);
  // PostgreSQL (15 and later) reports a backend's counters within a second while it works, but only
  // after 10 s once it is idle: the readings wait that out, so the previous phase's tail and this
  // one's last payout land where they belong.
  const STATS_SETTLE_MS = 11_000;
  await sleep(STATS_SETTLE_MS);
  const before = await databaseCounters(db);
  const temporalBefore = await temporal?.persistenceCounters();
  const since = new Date();
  const ids: string[] = [];
  let ownReads = 1;
  for (let i = 0; i < payouts; i += 1) {
    const created = await service.post();
    await service.pay(created.pixCopyPaste);
    for (;;) {
      ownReads += 1;
      const { rows } = await db.query<{ status: string; workflow_id: string }>(
        'SELECT status, workflow_id FROM payouts WHERE id = $1',
        [created.id],
      );
      if (rows[0]?.status === 'COMPLETED') {
        ids.push(rows[0].workflow_id);
        break;
      }
      if (rows[0]?.status === 'FAILED') throw new Error(`payout ${created.id} FAILED`);
      await sleep(100);
    }
  }
  // The callbacks go out after COMPLETED; then the statistics settle as before the first reading.
  await sleep(STATS_SETTLE_MS);
  const after = await databaseCounters(db);
  const temporalAfter = await temporal?.persistenceCounters();
  const n = ids.length;
  const temporalPostgres = (() => {
    if (!temporalBefore || !temporalAfter) return undefined;
    let transactions = 0;
    let rowsWritten = 0;
    for (const [name, a] of Object.entries(temporalAfter.databases)) {
      const b = temporalBefore.databases[name];
      if (!name.startsWith('temporal') || !b) continue;
      transactions += a.transactions - b.transactions;
      rowsWritten += a.tuplesInserted + a.tuplesUpdated + a.tuplesDeleted;
      rowsWritten -= b.tuplesInserted + b.tuplesUpdated + b.tuplesDeleted;
    }
    return {
      transactionsPerPayout: Number((transactions / n).toFixed(1)),
      rowsWrittenPerPayout: Number((rowsWritten / n).toFixed(1)),
    };
  })();
  return {
    temporalPostgres,
    payouts: n,
    temporal: await costPerPayout(client, ids, since),
    servicePostgres: {
      transactionsPerPayout: Number(((after.transactions - before.transactions - ownReads) / n).toFixed(1)),
      rowsWrittenPerPayout: Number(((after.rowsWritten - before.rowsWritten) / n).toFixed(1)),
    },
  };
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

/**
 * Payouts end to end (POST, the payer pays, COMPLETED in the read model) with 1, 2 and 4 worker
 * processes and 1 and 2 apis against the same Temporal, PostgreSQL and chain: payouts per second, the
 * CPU each role used, and (when the bench knows Temporal's database) its transactions per second.
 */
async function measureScaling(
  service: Service,
  db: Db,
  persistence?: () => Promise<{ transactions: number }>,
): Promise<NonNullable<BenchResult['scaling']>> {
  const rows: NonNullable<BenchResult['scaling']> = [];
  const concurrency = num('BENCH_SCALING_CLIENTS', 16);
  const endToEnd = async (apis: Service) => {
    const created = await apis.post();
    await apis.pay(created.pixCopyPaste);
    for (;;) {
      const { rows: found } = await db.query<{ status: string }>('SELECT status FROM payouts WHERE id = $1', [
        created.id,
      ]);
      if (found[0]?.status === 'COMPLETED') return;
      if (found[0]?.status === 'FAILED') throw new Error(`payout ${created.id} FAILED`);
      await sleep(50);
    }
  };
  const extraWorkers: ManagedProcess[] = [];
  const extraApis: ManagedProcess[] = [];
  try {
    for (const apis of [1, 2]) {
      while (extraApis.length < apis - 1) {
        const api = startReplica('api', extraApis.length + 1);
        // A Ctrl-C during the phase stops the replicas too, not only the stack.
        teardown.add(api.name, () => api.stop());
        extraApis.push(api);
        await waitReady(`http://127.0.0.1:${3001 + extraApis.length - 1}/readyz`, api);
      }
      for (const workers of [1, 2, 4]) {
        while (extraWorkers.length < workers - 1) {
          const worker = startReplica('worker', extraWorkers.length + 1);
          teardown.add(worker.name, () => worker.stop());
          extraWorkers.push(worker);
          await waitReady(`http://127.0.0.1:${9481 + extraWorkers.length - 1}/metrics`, worker);
        }
        // New pollers settle before the clock starts.
        await sleep(3_000);
        const urls = [service.stack.apiUrl, ...extraApis.map((_, k) => `http://127.0.0.1:${3001 + k}`)];
        const target = service.withApis(urls);
        // CPU and Temporal's database transactions over the measured window only, warm-up excluded.
        const cpu = cpuMeter();
        let window: { began: number; seconds: number } | undefined;
        let before: Promise<{ transactions: number } | undefined> = Promise.resolve(undefined);
        let after: Promise<{ transactions: number } | undefined> = Promise.resolve(undefined);
        let cores: Record<string, number> = {};
        const result = await closedLoop(
          {
            concurrency,
            durationMs: SECONDS * 2000,
            warmupMs: WARMUP_MS,
            window: {
              opened: () => {
                cpu.start();
                before = persistence ? persistence() : before;
                window = { began: performance.now(), seconds: 0 };
              },
              closed: () => {
                cores = cpu.stop();
                after = persistence ? persistence() : after;
                if (window) window.seconds = (performance.now() - window.began) / 1000;
              },
            },
          },
          () => endToEnd(target),
        );
        const [sampledBefore, sampledAfter] = await Promise.all([before, after]);
        const seconds = window?.seconds ?? 0;
        const row = {
          workers,
          apis,
          concurrency,
          summary: result,
          cores: roundCores(cores),
          persistenceTransactionsPerSecond:
            sampledBefore && sampledAfter && seconds > 0
              ? Number(((sampledAfter.transactions - sampledBefore.transactions) / seconds).toFixed(0))
              : undefined,
        };
        rows.push(row);
        log(
          `scaling: ${workers} worker(s), ${apis} api(s), C=${concurrency}: ${fmt(result)} cpu ${JSON.stringify(row.cores)}` +
            (row.persistenceTransactionsPerSecond !== undefined
              ? ` persistence ${row.persistenceTransactionsPerSecond} tx/s`
              : ''),
        );
      }
      // The next api count starts again from one worker.
      await Promise.all(extraWorkers.splice(0).map((w) => w.stop()));
    }
  } finally {
    await Promise.all([...extraWorkers, ...extraApis].map((p) => p.stop()));
  }
  return rows;
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
