import path from 'node:path';

const MIGRATIONS_DIR = path.resolve(__dirname, '../../../migrations');

/**
 * Applies pending migrations (node-pg-migrate, SQL files in /migrations). Safe to run from several
 * processes at once: node-pg-migrate holds an advisory lock while it migrates.
 */
export async function runMigrations(
  databaseUrl: string,
  log: (msg: string) => void = () => {},
): Promise<void> {
  // node-pg-migrate is ESM-only; a real dynamic import loads it from this CommonJS module.
  const { runner } = await import('node-pg-migrate');
  await runner({
    databaseUrl,
    dir: MIGRATIONS_DIR,
    direction: 'up',
    migrationsTable: 'pgmigrations',
    count: Infinity,
    checkOrder: true,
    log,
  });
}
