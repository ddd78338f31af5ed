import type { DataConverter } from '@temporalio/common';
import type { Config } from '../config';
import { AesGcmPayloadCodec, parsePayloadKey } from './payload-codec';

type PayloadKeyConfig = Pick<Config, 'PAYLOAD_ENCRYPTION_KEY' | 'PAYLOAD_ENCRYPTION_PREVIOUS_KEYS'>;

/** The codec for PAYLOAD_ENCRYPTION_KEY, or undefined when no key is configured (never in production). */
export function createPayloadCodec(config: PayloadKeyConfig): AesGcmPayloadCodec | undefined {
  if (!config.PAYLOAD_ENCRYPTION_KEY) return undefined;
  const previous = (config.PAYLOAD_ENCRYPTION_PREVIOUS_KEYS ?? '')
    .split(',')
    .filter((text) => text.trim() !== '')
    .map(parsePayloadKey);
  return new AesGcmPayloadCodec({ current: parsePayloadKey(config.PAYLOAD_ENCRYPTION_KEY), previous });
}

/**
 * One data converter for every client (api, CLI, tests) and the worker: they must all agree, or a
 * worker cannot read what the api started. Without a key, payloads are plain JSON; config refuses
 * that when NODE_ENV=production.
 */
export function createDataConverter(config: PayloadKeyConfig): DataConverter {
  const codec = createPayloadCodec(config);
  return codec ? { payloadCodecs: [codec] } : {};
}
