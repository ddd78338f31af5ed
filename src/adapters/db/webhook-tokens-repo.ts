import type { Db } from './pool';

// The `token` column holds the hex SHA-256 of the token, never the token itself: the token is the
// key to the provider's event, and a de-dup record needs only to recognise it.

export async function isWebhookTokenRecorded(db: Db, provider: string, tokenHash: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM webhook_tokens WHERE provider = $1 AND token = $2', [
    provider,
    tokenHash,
  ]);
  return rowCount === 1;
}

/** Records the token; false when it was already there (a repeated delivery). */
export async function recordWebhookToken(db: Db, provider: string, tokenHash: string): Promise<boolean> {
  const { rowCount } = await db.query(
    'INSERT INTO webhook_tokens (provider, token) VALUES ($1, $2) ON CONFLICT DO NOTHING',
    [provider, tokenHash],
  );
  return rowCount === 1;
}

/** Drops de-dup records past their retention (at least 90 days, DECISIONS.md section 5). */
export async function pruneWebhookTokens(db: Db, retentionDays: number): Promise<number> {
  const { rowCount } = await db.query(
    'DELETE FROM webhook_tokens WHERE received_at < now() - make_interval(days => $1)',
    [Math.max(90, retentionDays)],
  );
  return rowCount ?? 0;
}
