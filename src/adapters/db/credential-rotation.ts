import { MAX_OVERLAP_SECONDS } from '../../domain/rotation';
import type { SecretBox } from '../secrets/secret-box';
import { apiKeyPrefix, hashApiKey, newApiKey } from './partners-repo';
import type { Db } from './pool';

/**
 * Rotation of a partner's credentials, with an overlap: the replaced one stays valid beside its
 * successor for `overlapSeconds` (0: refused at once), so the partner deploys the new one without a
 * moment where neither works. The one home of these rules: the admin CLI calls them, and so will a
 * partner self-service route.
 *
 * Nothing has to run when an overlap ends: an API key's revoked_at is set to that instant and every
 * lookup compares it with now(); a callback secret's until is compared at each delivery.
 */

export interface Rotation<T> {
  /** The new credential. */
  issued: T;
  /** When the replaced credentials stop being accepted; null when nothing was replaced or no overlap. */
  previousValidUntil: string | null;
}

function checkOverlap(overlapSeconds: number): void {
  if (!Number.isInteger(overlapSeconds) || overlapSeconds < 0 || overlapSeconds > MAX_OVERLAP_SECONDS)
    throw new RangeError(`overlap must be 0 to ${MAX_OVERLAP_SECONDS} seconds`);
}

/**
 * Issues a new API key (returned once, stored as its hash) and ends the partner's other keys after
 * the overlap. A key already ending sooner keeps its earlier end: a rotation never extends a key.
 * Null when the partner does not exist.
 */
export async function rotateApiKey(
  db: Db,
  partnerId: string,
  overlapSeconds = 0,
): Promise<Rotation<string> | null> {
  checkOverlap(overlapSeconds);
  const apiKey = newApiKey();
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    const found = await client.query('SELECT 1 FROM partners WHERE id = $1 FOR UPDATE', [partnerId]);
    if (found.rowCount === 0) {
      await client.query('ROLLBACK');
      return null;
    }
    const { rows } = await client.query<{ until: Date }>(
      `UPDATE api_keys
          SET revoked_at = LEAST(COALESCE(revoked_at, 'infinity'), now() + make_interval(secs => $2))
        WHERE partner_id = $1 AND (revoked_at IS NULL OR revoked_at > now())
        RETURNING revoked_at AS until`,
      [partnerId, overlapSeconds],
    );
    await client.query('INSERT INTO api_keys (key_hash, partner_id, key_prefix) VALUES ($1, $2, $3)', [
      hashApiKey(apiKey),
      partnerId,
      apiKeyPrefix(apiKey),
    ]);
    await client.query('COMMIT');
    return { issued: apiKey, previousValidUntil: latestInTheFuture(rows.map((r) => r.until)) };
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
}

export class NoCallbackConfigured extends Error {}

/**
 * A rotation with an overlap asked while another rotation's overlap still runs (docs/decisions.md
 * D70): the partner's receivers may still verify with the secret that overlap keeps, and two
 * signatures are all a callback carries, so nothing changes. `until` is when that overlap ends.
 */
export class CallbackOverlapActive extends Error {
  constructor(readonly until: string) {
    super(`a callback secret rotation's overlap is active until ${until}`);
  }
}

/**
 * Replaces the partner's callback signing secret with `secret`; during the overlap every callback
 * carries a signature by each (docs/callbacks.md), so a receiver checking either one accepts it.
 * While an earlier rotation's overlap runs, a rotation with an overlap is refused
 * (CallbackOverlapActive): it would end the secret that overlap keeps, which receivers may still
 * check. Without an overlap it goes ahead and ends every replaced secret at once (the way out of a
 * leaked one). Null when the partner does not exist; NoCallbackConfigured without a callback.
 */
export async function rotateCallbackSecret(
  db: Db,
  partnerId: string,
  secret: string,
  overlapSeconds: number,
  secrets: SecretBox,
): Promise<(Rotation<string> & { url: string }) | null> {
  checkOverlap(overlapSeconds);
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{
      callback_url: string | null;
      callback_secret: string | null;
      overlap_until: Date | null;
    }>(
      `SELECT callback_url, callback_secret,
              CASE WHEN callback_previous_secret_until > now() THEN callback_previous_secret_until END
                AS overlap_until
         FROM partners WHERE id = $1 FOR UPDATE`,
      [partnerId],
    );
    const partner = rows[0];
    if (!partner) {
      await client.query('ROLLBACK');
      return null;
    }
    if (!partner.callback_url || !partner.callback_secret) {
      await client.query('ROLLBACK');
      throw new NoCallbackConfigured('the partner has no callback to rotate the secret of');
    }
    const overlapping = overlapSeconds > 0;
    if (overlapping && partner.overlap_until) {
      await client.query('ROLLBACK');
      throw new CallbackOverlapActive(partner.overlap_until.toISOString());
    }
    const updated = await client.query<{ until: Date | null }>(
      `UPDATE partners
          SET callback_secret = $2,
              callback_previous_secret = CASE WHEN $3 THEN callback_secret END,
              callback_previous_secret_until = CASE WHEN $3 THEN now() + make_interval(secs => $4) END,
              updated_at = now()
        WHERE id = $1
        RETURNING callback_previous_secret_until AS until`,
      [partnerId, secrets.seal(secret, partnerId), overlapping, overlapSeconds],
    );
    await client.query('COMMIT');
    const until = updated.rows[0]?.until;
    return {
      issued: secret,
      previousValidUntil: until ? until.toISOString() : null,
      url: partner.callback_url,
    };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

function latestInTheFuture(instants: Date[]): string | null {
  const now = Date.now();
  const later = instants.filter((d) => d.getTime() > now).sort((a, b) => b.getTime() - a.getTime());
  return later[0] ? later[0].toISOString() : null;
}
