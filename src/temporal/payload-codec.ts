import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { PayloadKeyError, payloadKeyId } from '../adapters/secrets/payload-keys';

/**
 * AES-256-GCM encryption of every Temporal payload (workflow and activity inputs and results,
 * signals, queries, updates, memos). Workflow inputs carry the payer's PIX key, which can be a
 * person's CPF: the Temporal server, its database and its backups only ever hold ciphertext.
 *
 * Wire format of an encrypted payload: metadata `encoding: binary/encrypted` and
 * `encryption-key-id: <id>`; data = 12-byte IV || ciphertext || 16-byte GCM tag, where the
 * plaintext is the original Payload serialised as protobuf (so its own metadata is hidden too).
 * The key id (a hash prefix of the key, not the key) lets several keys coexist during a rotation.
 */

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA_KEY = 'encryption-key-id';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface PayloadKeyring {
  /** Encrypts everything new. */
  current: Buffer;
  /** Decrypt only: keys being rotated out, still needed for histories written under them. */
  previous?: readonly Buffer[];
}

export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly currentId: string;
  private readonly keys = new Map<string, Buffer>();

  constructor(private readonly keyring: PayloadKeyring) {
    this.currentId = payloadKeyId(keyring.current);
    for (const key of [keyring.current, ...(keyring.previous ?? [])]) this.keys.set(payloadKeyId(key), key);
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.encrypt(payload));
  }

  /** Payloads that are not ours to decrypt (written before encryption was switched on) pass through. */
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => (isEncrypted(payload) ? this.decrypt(payload) : payload));
  }

  private encrypt(payload: Payload): Payload {
    const plaintext = temporal.api.common.v1.Payload.encode(payload).finish();
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keyring.current, iv);
    const data = Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: {
        [METADATA_ENCODING_KEY]: encoder.encode(ENCRYPTED_ENCODING),
        [KEY_ID_METADATA_KEY]: encoder.encode(this.currentId),
      },
      data: new Uint8Array(data),
    };
  }

  private decrypt(payload: Payload): Payload {
    const keyIdBytes = payload.metadata?.[KEY_ID_METADATA_KEY];
    const keyId = keyIdBytes ? decoder.decode(keyIdBytes) : '';
    const key = this.keys.get(keyId);
    // A missing key is a deployment error (a rotation dropped a key too early): fail loudly, and the
    // workflow task is retried once the key is back, rather than running on without its data.
    if (!key) throw new PayloadKeyError(`payload encrypted with unknown key id "${keyId}"`);
    const data = Buffer.from(payload.data ?? new Uint8Array());
    if (data.length < IV_BYTES + TAG_BYTES) throw new PayloadKeyError('encrypted payload is truncated');
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    const plaintext = Buffer.concat([
      decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
      decipher.final(),
    ]);
    return temporal.api.common.v1.Payload.decode(plaintext);
  }
}

export function isEncrypted(payload: Payload): boolean {
  const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
  return encoding !== undefined && encoding !== null && decoder.decode(encoding) === ENCRYPTED_ENCODING;
}
