import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { payloadKeyId, type PayloadKeys } from './payload-keys';

/**
 * Secrets the service keeps in its database (partners' callback signing secrets) are sealed with
 * the same keys as the Temporal payloads: PAYLOAD_ENCRYPTION_KEY encrypts, the keys in
 * PAYLOAD_ENCRYPTION_PREVIOUS_KEYS still open what they sealed, so one rotation covers both.
 *
 * Stored form: `enc:v1:<key id>:<base64url(12-byte IV || AES-256-GCM ciphertext || 16-byte tag)>`.
 * The row's owner (the partner id) is bound as associated data: a sealed secret copied onto another
 * partner's row does not open. A value without the prefix is a secret stored before encryption (or
 * on a local stack without a key) and is read as is; production always has a key (config refuses
 * to start without one), so it never writes one in clear.
 */
export interface SecretBox {
  /** Whether seal() encrypts (false only without a configured key). */
  readonly encrypts: boolean;
  seal(secret: string, owner: string): string;
  open(stored: string, owner: string): string;
}

const PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class SecretKeyError extends Error {
  override readonly name = 'SecretKeyError';
}

export function createSecretBox({ current, previous }: PayloadKeys): SecretBox {
  const keys = new Map<string, Buffer>();
  for (const key of [...(current ? [current] : []), ...previous]) keys.set(payloadKeyId(key), key);
  const aad = (owner: string) => Buffer.from(`partner-secret:${owner}`, 'utf8');

  return {
    encrypts: current !== undefined,
    seal(secret, owner) {
      if (!current) return secret;
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', current, iv);
      cipher.setAAD(aad(owner));
      const data = Buffer.concat([iv, cipher.update(secret, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return `${PREFIX}${payloadKeyId(current)}:${data.toString('base64url')}`;
    },
    open(stored, owner) {
      if (!stored.startsWith(PREFIX)) return stored;
      const [keyId = '', body = ''] = stored.slice(PREFIX.length).split(':');
      const key = keys.get(keyId);
      // A key dropped from the rotation too early: fail loudly (the delivery is retried) rather than
      // sign with something the partner cannot verify.
      if (!key) throw new SecretKeyError(`secret sealed with unknown key id "${keyId}"`);
      const data = Buffer.from(body, 'base64url');
      if (data.length < IV_BYTES + TAG_BYTES) throw new SecretKeyError('sealed secret is truncated');
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
      decipher.setAAD(aad(owner));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      try {
        return Buffer.concat([
          decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
          decipher.final(),
        ]).toString('utf8');
      } catch {
        throw new SecretKeyError('sealed secret does not open (altered, or sealed for another partner)');
      }
    },
  };
}
