import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { migrationsDir } from '../../src/adapters/db/migrate';
import { createOwnDatabase, type OwnDatabase } from '../support/database';
import { until } from '../support/until';

const ROOT = path.resolve(__dirname, '../..');
/** node-pg-migrate's advisory lock: held by whichever migrator is migrating. */
const MIGRATION_LOCK = 7241865325823964;

/**
 * runMigrations in a process of its own (node-pg-migrate is ESM-only and cannot load in jest). The
 * process says "lock refused" each time its migrator asks for the migration lock and is told no,
 * read from the migrator's own query (pg's Client, which node-pg-migrate uses): the event that
 * shows a migrator waiting rather than ignoring the lock.
 */
function migrator(databaseUrl: string): {
  output: () => string;
  exited: Promise<{ code: number | null; stderr: string }>;
} {
  const script = `
    const pg = require('pg');
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (...args) {
      const result = query.apply(this, args);
      const text = typeof args[0] === 'string' ? args[0] : args[0] && args[0].text;
      if (text && text.includes('pg_try_advisory_lock') && result && result.then) {
        result.then((r) => r.rows[0].lockObtained || process.stdout.write('lock refused\\n'), () => {});
      }
      return result;
    };
    require('./src/adapters/db/migrate').runMigrations(process.env.DATABASE_URL);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return {
    output: () => stdout,
    exited: new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr }))),
  };
}

// Every api and worker replica may run the migrations job at the same moment, on an empty database.
describe('runMigrations', () => {
  let database: OwnDatabase;
  beforeAll(async () => {
    database = await createOwnDatabase({ empty: true });
  });
  afterAll(() => database?.drop());

  it('waits for another migrator instead of failing, and migrates only once it has the lock', async () => {
    // Hold the lock, as a replica in the middle of migrating would.
    const other = new Client({ connectionString: database.url });
    await other.connect();
    await other.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const migrators = Array.from({ length: 3 }, () => migrator(database.url));
    await until(
      'every migrator to ask for the lock and be refused',
      () => (migrators.every((m) => m.output().includes('lock refused')) ? true : undefined),
      { timeoutMs: 30_000 },
    );
    // Refused, they have done nothing: the database is as empty as it was.
    const { rows: tables } = await other.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'");
    expect(tables).toEqual([]);
    const { rows: released } = await other.query<{ at: Date }>('SELECT clock_timestamp() AS at');
    await other.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    await other.end();

    const results = await Promise.all(migrators.map((m) => m.exited));
    expect(results).toEqual(Array.from({ length: 3 }, () => ({ code: 0, stderr: '' })));
    // Each migration applied once, and only after the lock was free.
    const migrated = new Client({ connectionString: database.url });
    await migrated.connect();
    try {
      const { rows } = await migrated.query<{ name: string; run_on: Date }>(
        'SELECT name, run_on FROM pgmigrations ORDER BY id',
      );
      const files = readdirSync(migrationsDir())
        .filter((f) => f.endsWith('.sql'))
        .map((f) => f.replace(/\.sql$/, ''))
        .sort();
      expect(rows.map((r) => r.name)).toEqual(files);
      expect(rows.filter((r) => r.run_on < released[0]!.at)).toEqual([]);
    } finally {
      await migrated.end();
    }
  }, 60_000);
});
