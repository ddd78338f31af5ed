import { Pool, types } from 'pg';

// BIGINT (int8) columns hold money in integer units: parse them as bigint, never as float.
types.setTypeParser(types.builtins.INT8, (v) => BigInt(v));

export type Db = Pool;

export function createPool(databaseUrl: string, max = 10): Db {
  const pool = new Pool({ connectionString: databaseUrl, max, idleTimeoutMillis: 30_000 });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
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
