import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { SecretBox } from '../secrets/secret-box';
import type { Db } from './pool';

export interface Partner {
  id: string;
  name: string;
  status: 'active' | 'disabled';
  callbackUrl: string | null;
  createdAt: string;
}

export interface PartnerCallbackTarget {
  url: string;
  secret: string;
  /** The secret being replaced, while its overlap lasts (credential-rotation.ts): callbacks carry both signatures. */
  previousSecret?: string;
}

const KEY_PREFIX = 'pk_live_';

/** SHA-256 of the raw key: what the database holds and what a presented key is looked up by. */
export function hashApiKey(apiKey: string): Buffer {
  return createHash('sha256').update(apiKey, 'utf8').digest();
}

export function newApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** The first characters of a key, kept to tell keys apart in listings (never enough to use one). */
export function apiKeyPrefix(apiKey: string): string {
  return apiKey.slice(0, KEY_PREFIX.length + 4);
}

/**
 * A key is valid until its revoked_at: none, or one in the future while a rotation's overlap lasts.
 * Every lookup of a key uses this condition.
 */
const KEY_VALID = '(k.revoked_at IS NULL OR k.revoked_at > now())';

/**
 * Finds the active partner owning a key. The lookup is by hash (an index probe, whose timing says
 * nothing about the key); the caller compares the hashes in constant time as well.
 */
export async function findPartnerByKeyHash(
  db: Db,
  keyHash: Buffer,
): Promise<{ partnerId: string; keyHash: Buffer } | null> {
  const { rows } = await db.query<{ partner_id: string; key_hash: Buffer }>(
    `SELECT k.partner_id, k.key_hash FROM api_keys k JOIN partners p ON p.id = k.partner_id
      WHERE k.key_hash = $1 AND ${KEY_VALID} AND p.status = 'active'`,
    [keyHash],
  );
  const row = rows[0];
  return row ? { partnerId: row.partner_id, keyHash: row.key_hash } : null;
}

export async function createPartner(db: Db, name: string): Promise<{ partner: Partner; apiKey: string }> {
  const id = randomUUID();
  const apiKey = newApiKey();
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query(
      `INSERT INTO partners (id, name) VALUES ($1, $2) RETURNING id, name, status, callback_url, created_at`,
      [id, name],
    );
    await client.query('INSERT INTO api_keys (key_hash, partner_id, key_prefix) VALUES ($1, $2, $3)', [
      hashApiKey(apiKey),
      id,
      apiKeyPrefix(apiKey),
    ]);
    await client.query('COMMIT');
    return { partner: toPartner(rows[0]), apiKey };
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
}

export async function setPartnerStatus(
  db: Db,
  partnerId: string,
  status: Partner['status'],
): Promise<boolean> {
  const res = await db.query('UPDATE partners SET status = $2, updated_at = now() WHERE id = $1', [
    partnerId,
    status,
  ]);
  return res.rowCount === 1;
}

/**
 * Stores the callback URL and its signing secret, sealed by `secrets` (never in clear with a key). A
 * new setup ends any rotation's overlap: only this secret signs from now on.
 */
export async function setPartnerCallback(
  db: Db,
  partnerId: string,
  target: Pick<PartnerCallbackTarget, 'url' | 'secret'> | null,
  secrets: SecretBox,
): Promise<boolean> {
  const res = await db.query(
    `UPDATE partners SET callback_url = $2, callback_secret = $3, callback_previous_secret = NULL,
            callback_previous_secret_until = NULL, updated_at = now()
      WHERE id = $1`,
    [partnerId, target?.url ?? null, target ? secrets.seal(target.secret, partnerId) : null],
  );
  return res.rowCount === 1;
}

export async function findPartnerCallback(
  db: Db,
  partnerId: string,
  secrets: SecretBox,
): Promise<PartnerCallbackTarget | null> {
  const { rows } = await db.query<{
    callback_url: string | null;
    callback_secret: string | null;
    previous: string | null;
  }>(
    `SELECT callback_url, callback_secret,
            CASE WHEN callback_previous_secret_until > now() THEN callback_previous_secret END AS previous
       FROM partners WHERE id = $1`,
    [partnerId],
  );
  const row = rows[0];
  if (!row?.callback_url || !row.callback_secret) return null;
  return {
    url: row.callback_url,
    secret: secrets.open(row.callback_secret, partnerId),
    ...(row.previous ? { previousSecret: secrets.open(row.previous, partnerId) } : {}),
  };
}

export async function listPartners(db: Db): Promise<Partner[]> {
  const { rows } = await db.query(
    'SELECT id, name, status, callback_url, created_at FROM partners ORDER BY created_at',
  );
  return rows.map(toPartner);
}

function toPartner(row: {
  id: string;
  name: string;
  status: Partner['status'];
  callback_url: string | null;
  created_at: Date;
}): Partner {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    callbackUrl: row.callback_url,
    createdAt: row.created_at.toISOString(),
  };
}

/**
 * Sets the callback URL a partner gives through the api (docs/decisions.md D65). A partner that
 * already has a signing secret keeps it, and any rotation's overlap with it: moving the endpoint is
 * not a reason to change the key every receiver checks. Otherwise `newSecret` becomes the secret.
 * Null when the partner does not exist; `issued` says whether `newSecret` was stored.
 */
export async function setPartnerCallbackUrl(
  db: Db,
  partnerId: string,
  url: string,
  newSecret: string,
  secrets: SecretBox,
): Promise<{ issued: boolean } | null> {
  const sealed = secrets.seal(newSecret, partnerId);
  const { rows } = await db.query<{ issued: boolean }>(
    `UPDATE partners SET callback_url = $2, callback_secret = COALESCE(callback_secret, $3), updated_at = now()
      WHERE id = $1
      RETURNING callback_secret = $3 AS issued`,
    [partnerId, url, sealed],
  );
  return rows[0] ? { issued: rows[0].issued } : null;
}

/**
 * Removes the partner's callback URL and its secrets (a rotation's overlap too), answering the URL
 * it removed (null when none was set). Null when the partner does not exist.
 */
export async function clearPartnerCallback(
  db: Db,
  partnerId: string,
): Promise<{ previousUrl: string | null } | null> {
  const { rows } = await db.query<{ previous_url: string | null }>(
    `UPDATE partners p
        SET callback_url = NULL, callback_secret = NULL, callback_previous_secret = NULL,
            callback_previous_secret_until = NULL, updated_at = now()
       FROM (SELECT id, callback_url FROM partners WHERE id = $1 FOR UPDATE) old
      WHERE p.id = old.id
      RETURNING old.callback_url AS previous_url`,
    [partnerId],
  );
  return rows[0] ? { previousUrl: rows[0].previous_url } : null;
}

/** What a partner may read of its callback setup: never a secret. Null when the partner does not exist. */
export async function findPartnerCallbackSettings(
  db: Db,
  partnerId: string,
): Promise<{ url: string | null; previousSecretValidUntil: string | null } | null> {
  const { rows } = await db.query<{ callback_url: string | null; until: Date | null }>(
    `SELECT callback_url,
            CASE WHEN callback_previous_secret_until > now() THEN callback_previous_secret_until END AS until
       FROM partners WHERE id = $1`,
    [partnerId],
  );
  const row = rows[0];
  return row ? { url: row.callback_url, previousSecretValidUntil: row.until?.toISOString() ?? null } : null;
}
