import path from 'node:path';

const MIGRATIONS_DIR = path.resolve(__dirname, '../../../migrations');
const LOCK_WAIT_MS = 60_000;

/**
 * Applies pending migrations (node-pg-migrate, SQL files in /migrations). Every api and worker
 * replica runs this at start-up. node-pg-migrate takes an advisory lock with a *try* and fails at
 * once when another process holds it, so this waits for the other migrator to finish and then
 * runs again (finding nothing left to do).
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
        dir: MIGRATIONS_DIR,
        direction: 'up',
        migrationsTable: 'pgmigrations',
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
