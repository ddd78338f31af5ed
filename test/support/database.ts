import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { testDatabaseUrl } from './env';

/**
 * The migrated schema, copied once by global setup before any test connects: a new database made
 * from it is migrated at once, without running the migrations (and their ESM-only runner) again.
 */
export function templateName(databaseUrl: string): string {
  return `${new URL(databaseUrl).pathname.slice(1)}_template`;
}

export interface OwnDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A database of its own in the run's PostgreSQL, for a test that reads what other files write too
 * (a gauge over the whole read model, every row of a table): migrated, or `empty` for a test of
 * the migrations themselves. Dropped by `drop()`.
 */
export async function createOwnDatabase(opts: { empty?: boolean } = {}): Promise<OwnDatabase> {
  const shared = testDatabaseUrl();
  const name = `test_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const template = opts.empty ? 'template0' : templateName(shared);
  await admin(shared, `CREATE DATABASE ${name} TEMPLATE ${template}`);
  const url = new URL(shared);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin(shared, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** Copies the freshly migrated database as the template of createOwnDatabase (global setup). */
export async function makeTemplate(databaseUrl: string): Promise<void> {
  const template = templateName(databaseUrl);
  const source = new URL(databaseUrl).pathname.slice(1);
  await admin(databaseUrl, `DROP DATABASE IF EXISTS ${template} WITH (FORCE)`, 'postgres');
  await admin(databaseUrl, `CREATE DATABASE ${template} TEMPLATE ${source}`, 'postgres');
}

/** A statement that cannot run in a transaction, on a connection of its own (to `database`). */
async function admin(databaseUrl: string, sql: string, database?: string): Promise<void> {
  const url = new URL(databaseUrl);
  if (database) url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
