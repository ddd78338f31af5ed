import { Gauge, type Registry } from 'prom-client';
import type { Db } from '../adapters/db/pool';
import type { Logger } from './logger';

const OPEN_STATUSES = ['PENDING', 'PROCESSING'] as const;

/**
 * Gauges over the read model, computed at scrape time: how many payouts are open and how long the
 * oldest has been in its status. Counters of transitions cannot show a payout that silently stopped
 * moving; these can, whichever process or workflow is at fault, so "stuck in PROCESSING" alerts on
 * them. They live in the api, which keeps answering while workers are down (one likely cause).
 * The query reads only open rows, through the partial index on status.
 */
export function registerOpenPayoutGauges(registry: Registry, db: Db, logger: Logger): void {
  let pending: Promise<Map<string, { count: number; oldestAgeSeconds: number }> | null> | undefined;
  // Both gauges are collected in one scrape: one query serves them both.
  const snapshot = () => {
    pending ??= query(db, logger).finally(() => {
      pending = undefined;
    });
    return pending;
  };

  new Gauge({
    name: 'payouts_open',
    help: 'Payouts in a non-terminal status (read model), by status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const rows = await snapshot();
      this.reset();
      if (!rows) return;
      for (const status of OPEN_STATUSES) this.set({ status }, rows.get(status)?.count ?? 0);
    },
  });
  new Gauge({
    name: 'payouts_open_oldest_age_seconds',
    help: 'Seconds since the oldest open payout last changed status (0 when none is open), by status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const rows = await snapshot();
      this.reset();
      if (!rows) return;
      for (const status of OPEN_STATUSES) this.set({ status }, rows.get(status)?.oldestAgeSeconds ?? 0);
    },
  });
}

async function query(db: Db, logger: Logger) {
  try {
    const { rows } = await db.query<{ status: string; count: number; oldest_age_seconds: number }>(
      `SELECT status, count(*)::int AS count,
              COALESCE(EXTRACT(EPOCH FROM now() - min(updated_at)), 0)::float8 AS oldest_age_seconds
         FROM payouts
        WHERE status IN ('PENDING', 'PROCESSING')
        GROUP BY status`,
    );
    return new Map(rows.map((r) => [r.status, { count: r.count, oldestAgeSeconds: r.oldest_age_seconds }]));
  } catch (err) {
    // No value is better than a stale one; the database being down has its own alert (readyz).
    logger.warn({ err: String(err) }, 'could not read open payouts for metrics');
    return null;
  }
}
