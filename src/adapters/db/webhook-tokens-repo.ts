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
