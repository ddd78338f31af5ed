import type { DataConverter } from '@temporalio/common';
import type { PayloadKeys } from '../adapters/secrets/payload-keys';
import { AesGcmPayloadCodec } from './payload-codec';

/** The codec for the current payload key, or undefined when there is none (never in production). */
export function createPayloadCodec(keys: PayloadKeys): AesGcmPayloadCodec | undefined {
  if (!keys.current) return undefined;
  return new AesGcmPayloadCodec({ current: keys.current, previous: keys.previous });
}

/** The module whose `failureConverter` encodes failures' messages and stacks (failure-converter.ts). */
export const FAILURE_CONVERTER_PATH = require.resolve('./failure-converter');

/**
 * One data converter for every client (api, CLI, tests) and the worker: they must all agree, or a
 * worker cannot read what the api started. Without a key, payloads are plain JSON; config refuses
 * that when NODE_ENV=production. Failures' messages and stacks travel as a payload too, so the
 * codec encrypts them with the rest.
 */
export function createDataConverter(keys: PayloadKeys): DataConverter {
  const codec = createPayloadCodec(keys);
  return {
    failureConverterPath: FAILURE_CONVERTER_PATH,
    ...(codec ? { payloadCodecs: [codec] } : {}),
  };
}
