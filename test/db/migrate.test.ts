import { spawn } from 'node:child_process';
import path from 'node:path';
import { Client } from 'pg';
import { testDatabaseUrl } from '../support/env';

const ROOT = path.resolve(__dirname, '../..');

/** runMigrations in a process of its own (node-pg-migrate is ESM-only and cannot load in jest). */
function migrateInProcess(): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        "require('./src/adapters/db/migrate').runMigrations(process.env.DATABASE_URL)",
      ],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: testDatabaseUrl() } },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

// Every api and worker replica migrates at start-up, often at the same moment.
describe('runMigrations', () => {
  it('waits for another migrator instead of failing', async () => {
    // Hold node-pg-migrate's own advisory lock, as a replica in the middle of migrating would.
    const other = new Client({ connectionString: testDatabaseUrl() });
    await other.connect();
    await other.query('SELECT pg_advisory_lock(7241865325823964)');
    const running = Promise.all(Array.from({ length: 3 }, migrateInProcess));
    await new Promise((r) => setTimeout(r, 2_000));
    await other.query('SELECT pg_advisory_unlock(7241865325823964)');
    await other.end();
    const results = await running;
    expect(results).toEqual(Array.from({ length: 3 }, () => ({ code: 0, stderr: '' })));
  }, 60_000);
});
