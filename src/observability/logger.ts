import pino, { type Logger } from 'pino';
import { redactUrls } from '../domain/url-redaction';

export type { Logger };

/**
 * Secrets and personal data never reach the logs: API keys, PIX keys (a CPF is a person's tax id),
 * webhook tokens, private keys, payload keys and callback secrets are censored wherever they appear.
 * Two layers: pino's path redaction for the well-known places (fast, and it covers values added by
 * serializers), and a walk over every logged object that censors any field with a sensitive name at
 * any depth, because a path list cannot foresee `{ payout: { request: { pixKey } } }`.
 */
export const REDACTED_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'headers["x-api-key"]',
  'headers.authorization',
  '*.apiKey',
  '*.api_key',
  '*.pixKey',
  '*.pix_key',
  '*.payerPixKey',
  '*.payer_pix_key',
  '*.token',
  '*.privateKey',
  '*.treasuryPrivateKey',
  '*.secret',
  '*.callbackSecret',
  'apiKey',
  'pixKey',
  'pix_key',
  'token',
  'privateKey',
  'secret',
];

export const CENSOR = '[redacted]';

// Field names compared without case, dashes or underscores: pixKey, pix_key and PIX-KEY are one.
const SENSITIVE_FIELDS = new Set(
  [
    'apiKey',
    'xApiKey',
    'authorization',
    'cookie',
    'pixKey',
    'payerPixKey',
    'token',
    'accessToken',
    'refreshToken',
    'privateKey',
    'treasuryPrivateKey',
    'walletPrivateKey',
    'secret',
    'callbackSecret',
    'clientSecret',
    'password',
    'payloadEncryptionKey',
    'codecAuthToken',
  ].map(normalise),
);
const MAX_DEPTH = 8;

function normalise(field: string): string {
  return field.replace(/[-_]/g, '').toLowerCase();
}

/**
 * A copy of `value` with sensitive fields censored and URLs cut to their host (url-redaction.ts);
 * plain objects and arrays only, others as they are.
 */
export function scrubSecrets(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactUrls(value);
  if (depth > MAX_DEPTH || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => scrubSecrets(item, depth + 1));
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    out[key] =
      SENSITIVE_FIELDS.has(normalise(key)) && field !== undefined ? CENSOR : scrubSecrets(field, depth + 1);
  }
  return out;
}

function scrubbedError(err: Error): unknown {
  // The serializer's object has a prototype of its own, which scrubSecrets would leave as it is.
  return scrubSecrets({ ...pino.stdSerializers.err(err) });
}

export function createLogger(opts: {
  level: string;
  name: string;
  destination?: pino.DestinationStream;
}): Logger {
  return pino(
    {
      name: opts.name,
      level: opts.level,
      redact: { paths: REDACTED_PATHS, censor: CENSOR },
      formatters: { log: (object) => scrubSecrets(object) as Record<string, unknown> },
      // The Temporal SDK passes errors as `error`; without a serializer they would log as `{}`. An
      // error's message, stack and causes name the URL it called (viem: "URL: https://…/v2/<key>").
      serializers: { err: scrubbedError, error: scrubbedError },
      hooks: {
        // The message itself, and its interpolated arguments; `logger.error(err)` takes err.message.
        logMethod(args, method) {
          const [first] = args;
          const given = first instanceof Error && args.length === 1 ? [first, first.message] : args;
          method.apply(
            this,
            given.map((arg) => (typeof arg === 'string' ? redactUrls(arg) : arg)) as Parameters<
              typeof method
            >,
          );
        },
      },
      base: { service: opts.name },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    opts.destination,
  );
}
