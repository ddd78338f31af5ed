import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runMigrations } from '../../src/adapters/db/migrate';
import { createPartner } from '../../src/adapters/db/partners-repo';
import { listPartnerPayouts } from '../../src/adapters/db/payouts-repo';
import { createPool } from '../../src/adapters/db/pool';
import { freePort } from '../local/infra/ports';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../local/infra/postgres';

/**
 * `npx tsx dev/bench/list-payouts.ts [payouts] [page size]`: the daily reconciliation of one partner
 * among others, paged through the list query as GET /v1/payouts runs it. Seeds the read model
 * (default 100,000 payouts for the partner, created in bursts that share timestamps, plus as many
 * for other partners), pages through all of them, checks that every payout came exactly once, and
 * prints the page latencies and the plan of a page. Uses DATABASE_URL when set (it must be a
 * database it may write to), else a throw-away embedded PostgreSQL.
 */
async function main(): Promise<void> {
  const total = Number(process.argv[2] ?? 100_000);
  const pageSize = Number(process.argv[3] ?? 100);
  let postgres: EmbeddedPostgresHandle | undefined;
  let tempDir: string | undefined;
  let databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    tempDir = await mkdtemp(path.join(os.tmpdir(), 'bench-pg-'));
    await chmod(tempDir, 0o755);
    postgres = await startEmbeddedPostgres({
      dataDir: path.join(tempDir, 'data'),
      port: await freePort(),
      persistent: false,
    });
    databaseUrl = postgres.databaseUrl;
  }
  const db = createPool(databaseUrl, 2);
  try {
    await runMigrations(databaseUrl);
    const { partner } = await createPartner(db, 'bench');
    const { partner: other } = await createPartner(db, 'bench neighbour');
    const seedStarted = performance.now();
    for (const partnerId of [partner.id, other.id]) {
      // Bursts of 50 payouts per millisecond-rounded instant, one instant a second.
      await db.query(
        `INSERT INTO payouts (id, partner_id, workflow_id, run_id, version, status, amount_centavos,
           min_amount_usdt_units, pix_key, pix_key_type, receiver_wallet, pix_copy_paste, created_at, updated_at)
         SELECT gen_random_uuid(), $1, 'bench', 'bench', 1, (ARRAY['PENDING','PROCESSING','COMPLETED','FAILED'])[1 + n % 4],
           1000 + n, 1700000, '12345678901', 'CPF', '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', 'code',
           timestamptz '2026-01-01T00:00:00Z' + (n / 50) * interval '1 second',
           timestamptz '2026-01-01T00:00:00Z'
         FROM generate_series(0, $2 - 1) AS n`,
        [partnerId, total],
      );
    }
    await db.query('ANALYZE payouts');
    console.log(`seeded ${2 * total} payouts in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`);

    const latencies: number[] = [];
    const seen = new Set<string>();
    let after: string | undefined;
    const started = performance.now();
    for (;;) {
      const t = performance.now();
      const page = await listPartnerPayouts(db, {
        partnerId: partner.id,
        startingAfter: after,
        limit: pageSize,
      });
      latencies.push(performance.now() - t);
      if (!page) throw new Error('cursor not found');
      for (const p of page.payouts) {
        if (seen.has(p.id)) throw new Error(`duplicate ${p.id}`);
        seen.add(p.id);
      }
      if (!page.hasMore) break;
      after = page.payouts.at(-1)!.id;
    }
    const elapsed = (performance.now() - started) / 1000;
    if (seen.size !== total) throw new Error(`saw ${seen.size} of ${total} payouts`);
    latencies.sort((a, b) => a - b);
    const pct = (q: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!.toFixed(2);
    console.log(
      `paged ${seen.size} payouts (no duplicates, no gaps) in ${latencies.length} pages of ${pageSize}: ` +
        `${elapsed.toFixed(1)} s; page latency ms p50 ${pct(0.5)} p99 ${pct(0.99)} max ${pct(1)}`,
    );

    const plan = await db.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN ANALYZE SELECT * FROM payouts WHERE partner_id = $1
         AND (created_at, id) < (SELECT created_at, id FROM payouts WHERE id = $2 AND partner_id = $1)
         ORDER BY created_at DESC, id DESC LIMIT ${pageSize + 1}`,
      [partner.id, [...seen][Math.floor(total / 2)]],
    );
    console.log(plan.rows.map((r) => `  ${r['QUERY PLAN']}`).join('\n'));
  } finally {
    await db.end();
    await postgres?.stop();
    if (tempDir) await rm(tempDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
