import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * Secrets and personal data never reach the logs: API keys, PIX keys (a CPF is a person's tax id),
 * webhook tokens, private keys and callback secrets are censored wherever they appear.
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

export function createLogger(opts: { level: string; name: string; destination?: pino.DestinationStream }): Logger {
  return pino(
    {
      name: opts.name,
      level: opts.level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { service: opts.name },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    opts.destination,
  );
}
