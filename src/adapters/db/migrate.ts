import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { Db } from './pool';

const LOCK_WAIT_MS = 60_000;
const MIGRATIONS_TABLE = 'pgmigrations';

/** migrations/ of the checkout or image: the nearest ancestor that has it (from src/ and dist/src/). */
export function migrationsDir(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'migrations');
    if (existsSync(path.join(dir, 'package.json')) && existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) throw new Error(`no migrations/ directory above ${__dirname}`);
  }
}

/**
 * Applies pending migrations (node-pg-migrate, SQL files in /migrations). In production this is a
 * one-shot job (`node dist/src/main/migrate.js`) run before the new api and worker replicas start;
 * the local launcher and the tests call it directly. node-pg-migrate takes an advisory lock with a
 * *try* and fails at once when another process holds it, so this waits for the other migrator to
 * finish and then runs again (finding nothing left to do): two jobs started at once both succeed.
 */
export async function runMigrations(
  databaseUrl: string,
  log: (msg: string) => void = () => {},
): Promise<void> {
  // node-pg-migrate is ESM-only; a real dynamic import loads it from this CommonJS module.
  const { runner } = await import('node-pg-migrate');
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (let delay = 100; ; delay = Math.min(delay * 2, 2_000)) {
    try {
      await runner({
        databaseUrl,
        dir: migrationsDir(),
        direction: 'up',
        migrationsTable: MIGRATIONS_TABLE,
        count: Infinity,
        checkOrder: true,
        log,
      });
      return;
    } catch (err) {
      const locked = err instanceof Error && err.message.includes('Another migration is already running');
      if (!locked || Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/**
 * Refuses to serve on a schema older than the code: every migration file must have been applied.
 * The api and worker call this at start instead of migrating themselves, so replicas never race to
 * migrate and a forgotten migrations job is a clear error, not a failed query later. Migrations
 * newer than the code (a rollout in progress) are fine.
 */
export async function assertSchemaCurrent(db: Db): Promise<void> {
  const expected = readdirSync(migrationsDir())
    .filter((f) => /\.(sql|js|ts)$/.test(f))
    .map((f) => f.replace(/\.(sql|js|ts)$/, ''));
  const { rows } = await db
    .query<{ name: string }>(`SELECT name FROM ${MIGRATIONS_TABLE}`)
    .catch((err: unknown) => {
      if ((err as { code?: string }).code === '42P01') return { rows: [] as { name: string }[] };
      throw err;
    });
  const applied = new Set(rows.map((r) => r.name));
  const missing = expected.filter((name) => !applied.has(name)).sort();
  if (missing.length > 0) {
    throw new Error(
      `the database schema is not up to date (${missing.length} migration(s) not applied: ${missing.join(', ')}); ` +
        'run the migrations job first: node dist/src/main/migrate.js (npm run migrate from a checkout)',
    );
  }
}
