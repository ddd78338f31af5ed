import { z } from 'zod';
import { parsePayloadKey } from '../adapters/secrets/payload-keys';
import { int, optional, type ConfigRule } from './values';

/** What every process of the service reads alike: logs, the database, Temporal, the payload keys, traces. */

const isPayloadKey = (text: string) => {
  try {
    parsePayloadKey(text);
    return true;
  } catch {
    return false;
  }
};
const payloadKey = z.string().refine(isPayloadKey, 'must be 32 bytes as 64 hex digits or base64');
const payloadKeyList = z
  .string()
  .refine((text) => text.split(',').every(isPayloadKey), 'must be comma-separated keys');

export const SHARED_VARIABLES = {
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  HOST: z.string().default('127.0.0.1'),
  DATABASE_URL: z.string().default('postgres://postgres:password@127.0.0.1:5432/payouts'),
  DATABASE_POOL_SIZE: int(10, 1),
  // Temporal connection: the names the `temporal` CLI and the SDKs' environment configuration read
  // (src/temporal/connection.ts); a profile of the Temporal config file fills what is not set.
  TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
  // The service's own namespace: samples, CLI experiments and other tools' test workflows default to
  // "default", and never mix with payouts there.
  TEMPORAL_NAMESPACE: z.string().default('payouts'),
  TEMPORAL_TASK_QUEUE: z.string().default('payouts'),
  TEMPORAL_PROFILE: optional(z.string()),
  TEMPORAL_API_KEY: optional(z.string()),
  TEMPORAL_TLS: optional(z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1')),
  TEMPORAL_TLS_CLIENT_CERT_PATH: optional(z.string()),
  TEMPORAL_TLS_CLIENT_KEY_PATH: optional(z.string()),
  // 32 bytes (AES-256), as 64 hex digits or base64 (`openssl rand -base64 32`).
  PAYLOAD_ENCRYPTION_KEY: optional(payloadKey),
  // Keys being rotated out: still decrypt the histories written under them, never encrypt.
  PAYLOAD_ENCRYPTION_PREVIOUS_KEYS: optional(payloadKeyList),
  // OpenTelemetry traces go to this OTLP/HTTP endpoint (<url>/v1/traces); unset, tracing is off.
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(z.url({ protocol: /^https?$/ })),
};

// Groups read together by more than one process.
export const TEMPORAL_CONNECTION = [
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_PROFILE',
  'TEMPORAL_API_KEY',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
] as const;
// NODE_ENV goes with the keys: production refuses to run without one.
export const PAYLOAD_KEYS = [
  'NODE_ENV',
  'PAYLOAD_ENCRYPTION_KEY',
  'PAYLOAD_ENCRYPTION_PREVIOUS_KEYS',
] as const;
export const DATABASE = ['DATABASE_URL', 'DATABASE_POOL_SIZE'] as const;

/**
 * PIX keys (a CPF is personal data) travel in workflow payloads, and partners' callback secrets are
 * sealed with the same keys: production never stores them in clear.
 */
export const payloadKeyRules: ConfigRule = (env, reads) =>
  reads.has('PAYLOAD_ENCRYPTION_KEY') && env.NODE_ENV === 'production' && !env.PAYLOAD_ENCRYPTION_KEY
    ? [{ code: 'custom', path: ['PAYLOAD_ENCRYPTION_KEY'], message: 'is required when NODE_ENV=production' }]
    : [];
