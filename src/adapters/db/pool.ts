import { Pool, types } from 'pg';

// BIGINT (int8) columns hold money in integer units: parse them as bigint, never as float.
types.setTypeParser(types.builtins.INT8, (v) => BigInt(v));

export type Db = Pool;

export function createPool(databaseUrl: string, max = 10): Db {
  const pool = new Pool({ connectionString: databaseUrl, max, idleTimeoutMillis: 30_000 });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  // The pool listens only on idle clients. A checked-out one (a transaction between statements)
  // whose connection drops, as on every PostgreSQL restart, emits 'error' too: unheard, that is an
  // uncaught exception that ends the process. Its pending and next queries fail with the error
  // instead, and the pool discards it on release (it is no longer queryable).
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

export async function isDatabaseReachable(db: Db): Promise<boolean> {
  try {
    await db.query('SELECT 1');
    return true;
  } catch {
    return false;
  }
}
