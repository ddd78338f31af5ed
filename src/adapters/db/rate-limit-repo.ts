import type { Db } from './pool';

/**
 * Takes one token from a per-key bucket kept in PostgreSQL, so every api replica shares it.
 * The bucket holds `perMinute` tokens and refills continuously at perMinute / 60 a second.
 */
export async function takeRateLimitToken(db: Db, bucket: string, perMinute: number): Promise<boolean> {
  const { rows } = await db.query<{ allowed: boolean }>(
    'SELECT take_rate_limit_token($1, $2, $3) AS allowed',
    [bucket, perMinute, perMinute / 60],
  );
  return rows[0]!.allowed;
}
