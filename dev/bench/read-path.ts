import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Client } from '@temporalio/client';
import Fastify from 'fastify';
import pino from 'pino';
import { runMigrations } from '../../src/adapters/db/migrate';
import { createPartner } from '../../src/adapters/db/partners-repo';
import { createPool } from '../../src/adapters/db/pool';
import { buildApp } from '../../src/api/app';
import { loadApiConfig } from '../../src/config';
import { createMetrics } from '../../src/observability/metrics';
import { createLogger } from '../../src/observability/logger';
import { freePort } from '../local/infra/ports';
import { startEmbeddedPostgres } from '../local/infra/postgres';
import { BenchHttp } from './http-client';
import { closedLoop, type Summary } from './stats';

/**
 * A focused bench of the api's closed GET /v1/payouts/{id}, apart from `npm run bench` (which owns a
 * whole stack on the default ports): a throwaway PostgreSQL of its own on a free loopback port, the
 * api built as src/main/api.ts builds it (buildApp, the same settings as the bench's stack: limits
 * raised, LOG_LEVEL warn unless READ_BENCH_LOG_LEVEL says otherwise) in a child process, and beside it
 * in the same process and on the same pool the floor: a bare Fastify route doing one indexed SELECT
 * of the payout's row. A closed loop of READ_BENCH_CLIENTS (16) clients from this process, each
 * figure READ_BENCH_SECONDS (5) long, floor and api alternating READ_BENCH_ROUNDS (2) times. Nothing
 * needs Temporal: a closed payout is answered by the read model alone (load-payout.ts).
 *
 *   npx tsx dev/bench/read-path.ts
 */
const CLIENTS = Number(process.env.READ_BENCH_CLIENTS ?? 16);
const SECONDS = Number(process.env.READ_BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.READ_BENCH_ROUNDS ?? 2);
const PAYOUTS = 2_000;

async function serve(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL!;
  const config = loadApiConfig({
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: process.env.READ_BENCH_LOG_LEVEL ?? 'warn',
    POST_RATE_LIMIT_PER_MINUTE: '10000000',
    READ_RATE_LIMIT_PER_MINUTE: process.env.READ_BENCH_READ_LIMIT ?? '10000000',
    SCREENING_SOURCES: 'denylist',
  });
  const db = createPool(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  const app = await buildApp({
    config,
    db,
    // Connects only when used: a closed GET never uses it.
    temporal: new Client(),
    quote: async () => ({ rate: '5.50', expiresAt: new Date(Date.now() + 30_000).toISOString() }),
    logger: createLogger({
      level: config.LOG_LEVEL,
      name: 'payout-api',
      destination: pino.destination({ dest: '/dev/null', sync: true }),
    }),
    metrics: createMetrics(),
    screening: { screen: async () => ({ kind: 'clear' }) },
    callbacks: {} as never,
  });
  const apiUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  const floor = Fastify();
  floor.get<{ Params: { id: string } }>('/floor/:id', async (req, reply) => {
    const { rows } = await db.query('SELECT * FROM payouts WHERE id = $1', [req.params.id]);
    const body = JSON.stringify(rows[0], (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    return reply.type('application/json').send(body);
  });
  const floorUrl = await floor.listen({ host: '127.0.0.1', port: 0 });
  process.once('SIGTERM', () => process.exit(0));
  process.stdout.write(`${JSON.stringify({ apiUrl, floorUrl })}\n`);
}

/** CPU seconds (user + system) a process has used so far; 0 once it is gone. */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** The postmaster and its backends. */
function postgresCpuSeconds(postmaster: number): number {
  let total = cpuSeconds(postmaster);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
      if (ppid === postmaster) total += cpuSeconds(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'read-bench-pg-'));
  const pg = await startEmbeddedPostgres({
    dataDir: path.join(dir, 'data'),
    port: await freePort(),
    persistent: false,
  });
  try {
    await runMigrations(pg.databaseUrl);
    const db = createPool(pg.databaseUrl, 2);
    const { partner, apiKey } = await createPartner(db, 'read bench');
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO payouts (id, partner_id, workflow_id, run_id, version, status, amount_centavos,
         min_amount_usdt_units, settled_amount_usdt_units, pix_key, pix_key_type, receiver_wallet,
         pix_copy_paste, provider_charge_id, blockchain_tx_id, paid_at, confirmed_at, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'seed-' || n, 'seed-run', 4, 'COMPLETED', 10000 + n, 17152658, 17825311,
         '12345678901', 'CPF', '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', '00020101021226...6304ABCD',
         'chg_' || n, '0x' || repeat('ab', 32), now(), now(), now(), now()
       FROM generate_series(1, $2) AS n RETURNING id`,
      [partner.id, PAYOUTS],
    );
    await db.query('ANALYZE');
    await db.end();
    const ids = rows.map((r) => r.id);

    const child = spawn(
      process.execPath,
      [
        ...process.execArgv,
        // READ_BENCH_PROF=dir: the api's CPU profile (node --cpu-prof), written when it stops.
        ...(process.env.READ_BENCH_PROF
          ? ['--cpu-prof', `--cpu-prof-dir=${process.env.READ_BENCH_PROF}`]
          : []),
        __filename,
        'serve',
      ],
      {
        env: { ...process.env, DATABASE_URL: pg.databaseUrl },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const urls = await new Promise<{ apiUrl: string; floorUrl: string }>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`server exited ${code}`)));
      createInterface({ input: child.stdout! }).once('line', (line) => resolve(JSON.parse(line)));
    });
    try {
      const http = new BenchHttp();
      const pick = (seq: number) => ids[(seq * 7919) % ids.length]!;
      const get = async (url: string, headers: Record<string, string>) => {
        const res = await http.call('GET', url, headers);
        if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
      };
      const runs = {
        floor: (seq: number) => get(`${urls.floorUrl}/floor/${pick(seq)}`, {}),
        api: (seq: number) => get(`${urls.apiUrl}/v1/payouts/${pick(seq)}`, { 'x-api-key': apiKey }),
      };
      type Figure = Summary & { firstError?: string; serverCpuMs: number; postgresCpuMs: number };
      const results: Record<string, Figure[]> = { floor: [], api: [] };
      for (let round = 0; round < ROUNDS; round += 1) {
        for (const name of ['floor', 'api'] as const) {
          // CPU per request across the whole phase, warm-up included (its requests too).
          const server0 = cpuSeconds(child.pid!);
          const pg0 = postgresCpuSeconds(pg.pid);
          let requests = 0;
          const loop = await closedLoop(
            { concurrency: CLIENTS, durationMs: SECONDS * 1000, warmupMs: 1_000 },
            (_c, seq) => {
              requests += 1;
              return runs[name](seq);
            },
          );
          const s: Figure = {
            ...loop,
            serverCpuMs: ((cpuSeconds(child.pid!) - server0) * 1000) / requests,
            postgresCpuMs: ((postgresCpuSeconds(pg.pid) - pg0) * 1000) / requests,
          };
          if (s.errors) throw new Error(`${name}: ${s.errors} errors, first: ${s.firstError}`);
          results[name]!.push(s);
          console.log(
            `round ${round + 1} ${name.padEnd(5)} p50 ${s.p50.toFixed(2)} ms  p99 ${s.p99.toFixed(2)} ms  ` +
              `${s.throughput.toFixed(0)} req/s  cpu/request: server ${s.serverCpuMs.toFixed(3)} ms, ` +
              `postgres ${s.postgresCpuMs.toFixed(3)} ms`,
          );
        }
      }
      const med = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
      const of = (name: string, k: 'p50' | 'p99' | 'throughput' | 'serverCpuMs' | 'postgresCpuMs') =>
        med(results[name]!.map((s) => s[k]));
      console.log(
        `C=${CLIENTS}: api/floor p50 ${(of('api', 'p50') / of('floor', 'p50')).toFixed(2)}x, ` +
          `p99 ${(of('api', 'p99') / of('floor', 'p99')).toFixed(2)}x, ` +
          `req/s ${(of('api', 'throughput') / of('floor', 'throughput')).toFixed(2)}x ` +
          `(api p50 ${of('api', 'p50').toFixed(2)} ms, p99 ${of('api', 'p99').toFixed(2)} ms, ` +
          `${of('api', 'throughput').toFixed(0)} req/s); cpu/request api/floor: server ` +
          `${(of('api', 'serverCpuMs') / of('floor', 'serverCpuMs')).toFixed(2)}x ` +
          `(${of('api', 'serverCpuMs').toFixed(3)} ms), postgres ` +
          `${(of('api', 'postgresCpuMs') / of('floor', 'postgresCpuMs')).toFixed(2)}x ` +
          `(${of('api', 'postgresCpuMs').toFixed(3)} ms)`,
      );
      http.close();
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  } finally {
    await pg.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'serve') {
  serve().catch((err) => {
    console.error(err);
    process.exit(1);
  });
} else {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
