import { runMigrations } from '../adapters/db/migrate';
import { loadMigrateConfig } from '../config';
import { createLogger } from '../observability/logger';

/**
 * The migrations job: applies pending migrations to DATABASE_URL and exits (0 on success). Run it
 * once per deployment before the new api and worker replicas (compose's `migrate` service, a
 * Kubernetes Job or a release phase); the replicas only check that the schema is current. Safe to
 * run twice at once: the second waits for the first.
 */
async function main(): Promise<void> {
  const config = loadMigrateConfig();
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'payout-migrate' });
  await runMigrations(config.DATABASE_URL, (msg) => logger.info(msg));
  logger.info('migrations applied');
}

main().catch((err: unknown) => {
  process.stderr.write(`migrations failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
