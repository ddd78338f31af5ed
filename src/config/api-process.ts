import { z } from 'zod';
import { bool, decimalString, int, optional, type ConfigIssue, type ConfigRule } from './values';

/** The api's own: where it listens, what a payout may be, its rate limits, the payload codec endpoint. */

export const API_VARIABLES = {
  // Proxies in front of the api whose X-Forwarded-For is believed: a comma-separated list of
  // addresses or CIDRs, or a number of hops. Unset, the client address is the TCP peer's.
  TRUST_PROXY: optional(
    z
      .string()
      .regex(/^(\d{1,2}|[0-9a-fA-F.:/]+(,\s*[0-9a-fA-F.:/]+)*)$/, 'must be a hop count or addresses/CIDRs'),
  ),
  PORT: int(3000),
  METRICS_PORT: int(9464),
  PUBLIC_BASE_URL: optional(z.url()),
  MIN_AMOUNT_BUFFER: decimalString.default('0.06'),
  SETTLEMENT_ABOVE_QUOTE_TOLERANCE: decimalString.default('0.02'),
  MAX_AMOUNT_BRL: decimalString
    .regex(/^\d+(\.\d{1,2})?$/, 'must have at most 2 decimal places')
    .default('100000.00'),
  // The api asks the provider for a payout's PIX charge itself and starts its workflow with it, so POST
  // waits for no worker (docs/decisions.md D81). false: the workflow's first task asks, and POST waits
  // for it (a staged rollout: workers first). Only the charge: quotes and webhook read-backs stay here.
  API_CREATES_CHARGES: bool(true),
  PIX_CHARGE_EXPIRY_SECONDS: int(3600, 60),
  SETTLEMENT_TIMEOUT_SECONDS: int(21_600, 60),
  POST_RATE_LIMIT_PER_MINUTE: int(100, 1),
  READ_RATE_LIMIT_PER_MINUTE: int(600, 1),
  // Requests to /v1/callback* per partner (all its keys together), apart from the two above: a test
  // event makes the api connect out, so these never spend the payout quota (docs/decisions.md D68).
  CALLBACK_RATE_LIMIT_PER_MINUTE: int(30, 1),
  // New provider-webhook tokens per client address (a repeated token is never throttled).
  WEBHOOK_RATE_LIMIT_PER_MINUTE: int(600, 1),
  // Missing or invalid API keys per client address; a valid key is never refused by it.
  AUTH_FAILURE_LIMIT_PER_MINUTE: int(60, 1),
  CODEC_AUTH_TOKEN: optional(z.string().min(16, 'must be at least 16 characters')),
  CODEC_CORS_ORIGINS: z.string().default('http://127.0.0.1:8233,http://localhost:8233'),
  // A Web UI behind OIDC (Temporal Cloud's included) passes its users' access tokens to the codec.
  // https only: whoever could alter the keys on the way could sign access tokens of their own.
  CODEC_OIDC_JWKS_URL: optional(
    z.url({
      protocol: /^https$/,
      error: 'must be an https URL (the issuer keys that access tokens are checked against)',
    }),
  ),
  CODEC_OIDC_ISSUER: optional(z.string()),
  CODEC_OIDC_AUDIENCE: optional(z.string()),
  CODEC_OIDC_ALLOWED_USERS: optional(z.string()),
};

/** The codec endpoint's OIDC settings, whole. */
export const codecRules: ConfigRule = (env, reads) => {
  const issues: ConfigIssue[] = [];
  // An access token is checked against its issuer: keys without one would refuse everybody silently.
  if (reads.has('CODEC_OIDC_ISSUER') && env.CODEC_OIDC_JWKS_URL && !env.CODEC_OIDC_ISSUER) {
    issues.push({
      code: 'custom',
      path: ['CODEC_OIDC_ISSUER'],
      message: 'is required with CODEC_OIDC_JWKS_URL',
    });
  }
  // Without an audience, a token the issuer made for any other application of its tenant would do.
  if (
    reads.has('CODEC_OIDC_AUDIENCE') &&
    env.NODE_ENV === 'production' &&
    env.CODEC_OIDC_JWKS_URL &&
    !env.CODEC_OIDC_AUDIENCE
  ) {
    issues.push({
      code: 'custom',
      path: ['CODEC_OIDC_AUDIENCE'],
      message:
        'is required with CODEC_OIDC_JWKS_URL when NODE_ENV=production (else an access token for any other application of the issuer would do)',
    });
  }
  return issues;
};
