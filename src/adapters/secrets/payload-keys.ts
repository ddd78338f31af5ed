import { createHash } from 'node:crypto';

/**
 * The service's AES-256 keys (PAYLOAD_ENCRYPTION_KEY and the rotated-out ones), parsed once here for
 * both their users: the Temporal payload codec and the secret box of partners' callback secrets.
 * One rotation covers both, so they must read a key, and name it, the same way.
 */

export class PayloadKeyError extends Error {
  override readonly name = 'PayloadKeyError';
}

export interface PayloadKeys {
  /** Encrypts everything new; none on a local stack without a key (never in production). */
  current?: Buffer;
  /** Decrypt only: keys being rotated out, still needed for what was written under them. */
  previous: readonly Buffer[];
}

/** A 32-byte key from 64 hex digits or base64 (standard or URL-safe), as PAYLOAD_ENCRYPTION_KEY holds it. */
export function parsePayloadKey(text: string): Buffer {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, 'hex');
  // 43 base64 digits (and the padding) are exactly 32 bytes; Buffer.from alone would skip stray text.
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)) return Buffer.from(trimmed, 'base64');
  throw new PayloadKeyError('must be 32 bytes (AES-256) as 64 hex digits or base64');
}

/** The current key and a comma-separated list of previous ones, as the two variables hold them. */
export function payloadKeys(current?: string, previous?: string): PayloadKeys {
  return {
    ...(current ? { current: parsePayloadKey(current) } : {}),
    previous: (previous ?? '')
      .split(',')
      .filter((text) => text.trim() !== '')
      .map(parsePayloadKey),
  };
}

/** Identifies a key in stored metadata without revealing anything usable about it. */
export function payloadKeyId(key: Buffer): string {
  return createHash('sha256').update('payout-payload-key:').update(key).digest('hex').slice(0, 16);
}
