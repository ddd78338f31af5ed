import { createHash } from 'node:crypto';
import type { Db } from './pool';
import { PAYOUT_COLUMNS, toStoredPayout, type PayoutRow, type StoredPayout } from './payouts-repo';

/** A recorded (or refused) Idempotency-Key, as findRecordedKey answers it. */
export interface RecordedKey {
  payoutId: string;
  workflowId: string;
  refusal: string | null;
}

export interface PartnerRequestLookup {
  /**
   * Take up to `wanted` tokens (at least one is asked for) of this rate-limit bucket, in the same
   * statement: the token function runs only for a valid key, so an unknown or revoked key spends
   * nothing and creates no bucket. The bucket is `name` as given, or, with `perPartner`, `name`
   * followed by the id of the key's partner (only known here): one bucket for all its keys.
   */
  bucket?: { name: string; perMinute: number; wanted: number; perPartner?: boolean };
  /** Also read this payout of the key's partner (an id already checked to be a UUID, lower case). */
  payoutId?: string;
  /** Also read this Idempotency-Key of the key's partner, if recorded or refused and not expired. */
  idempotencyKey?: string;
}

export interface PartnerRequest {
  partnerId: string;
  keyHash: Buffer;
  /** How many tokens it took (0: the bucket is empty; always 0 without `bucket`). */
  granted: number;
  /** With `payoutId`: the payout, or null when the partner has none by that id. */
  payout?: StoredPayout | null;
  /** With `idempotencyKey`: the key's recorded answer, or null when it has none (yet). */
  recordedKey?: RecordedKey | null;
}

// The same validity rule as partners-repo.ts: a key is valid until its revoked_at.
const KEY_VALID = '(k.revoked_at IS NULL OR k.revoked_at > now())';

/**
 * What a partner request reads first, in one round trip: the active partner owning the key (the same
 * lookup as findPartnerByKeyHash), the rate-limit tokens it takes (`bucket`),
 * and, for the key's partner only, the payout the request names (findPartnerPayout) and the recorded
 * answer of its Idempotency-Key (findRecordedKey). The key is looked up in a CTE, evaluated once
 * (it calls a volatile function), so the tokens are taken once and only for a valid key; the reads
 * are joined to that key's partner, so nothing of another partner, nor anything at all for an
 * unknown or revoked key, is ever read. Null when the key is not valid. Every read sees the same
 * snapshot, as each would have seen its own a moment apart.
 *
 * A named (prepared) statement: the one statement of every partner request, planned once per pooled
 * connection rather than on every request, where planning a join of four tables cost PostgreSQL as
 * much as the two statements it replaces (docs/decisions.md D78). It names its columns (PAYOUT_COLUMNS),
 * so a migration adding one does not break it.
 */
export async function findPartnerRequest(
  db: Db,
  keyHash: Buffer,
  lookup: PartnerRequestLookup,
): Promise<PartnerRequest | null> {
  const params: unknown[] = [keyHash];
  const param = (value: unknown) => `$${params.push(value)}`;
  let granted = '0';
  if (lookup.bucket) {
    const b = lookup.bucket;
    const name = b.perPartner ? `${param(b.name)} || k.partner_id::text` : param(b.name);
    granted = `take_rate_limit_tokens(${name}, ${param(b.perMinute)}, ${param(b.perMinute / 60)}, ${param(b.wanted)})`;
  }
  const columns = ['k.key_partner_id', 'k.key_hash', 'k.granted'];
  const joins: string[] = [];
  if (lookup.payoutId !== undefined) {
    columns.push(...PAYOUT_COLUMNS.map((c) => `po.${c}`));
    joins.push(
      `LEFT JOIN payouts po ON po.id = ${param(lookup.payoutId)}::uuid AND po.partner_id = k.key_partner_id`,
    );
  }
  if (lookup.idempotencyKey !== undefined) {
    columns.push(
      'ik.payout_id AS key_payout_id',
      'ik.workflow_id AS key_workflow_id',
      'ik.refusal AS key_refusal',
    );
    joins.push(
      `LEFT JOIN idempotency_keys ik ON ik.partner_id = k.key_partner_id AND ik.key = ${param(lookup.idempotencyKey)}
              AND ik.state IN ('recorded', 'refused') AND ik.expires_at > now()`,
    );
  }
  const text = `WITH k AS (
       SELECT k.partner_id AS key_partner_id, k.key_hash, ${granted} AS granted
         FROM api_keys k JOIN partners p ON p.id = k.partner_id
        WHERE k.key_hash = $1 AND ${KEY_VALID} AND p.status = 'active'
     )
     SELECT ${columns.join(', ')} FROM k ${joins.join(' ')}`;
  const { rows } = await db.query<
    Partial<PayoutRow> & {
      key_partner_id: string;
      key_hash: Buffer;
      granted: number;
      key_payout_id?: string | null;
      key_workflow_id?: string | null;
      key_refusal?: string | null;
    }
  >({ name: statementName(text), text, values: params });
  const row = rows[0];
  if (!row) return null;
  const found: PartnerRequest = {
    partnerId: row.key_partner_id,
    keyHash: row.key_hash,
    granted: row.granted,
  };
  if (lookup.payoutId !== undefined) found.payout = row.id ? toStoredPayout(row as PayoutRow) : null;
  if (lookup.idempotencyKey !== undefined)
    found.recordedKey = row.key_payout_id
      ? { payoutId: row.key_payout_id, workflowId: row.key_workflow_id!, refusal: row.key_refusal ?? null }
      : null;
  return found;
}

const names = new Map<string, string>();

/** One name per statement text (a handful of shapes): a name is never reused for another text. */
function statementName(text: string): string {
  let name = names.get(text);
  if (!name) {
    name = `partner-request-${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;
    names.set(text, name);
  }
  return name;
}
