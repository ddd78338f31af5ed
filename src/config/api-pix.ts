import { z } from 'zod';
import { optional, type ConfigIssue, type ConfigRule } from './values';

/** Which PIX provider collects the BRL, and the API Pix client's settings (docs/api-pix.md). */

export const PIX_PROVIDERS = ['provider-api', 'bcb-api-pix'] as const;
export type PixProvider = (typeof PIX_PROVIDERS)[number];
/** What PIX_PROVIDER=bcb-api-pix cannot run without. */
const API_PIX_REQUIRED = [
  'PIX_API_URL',
  'PIX_API_CLIENT_ID',
  'PIX_API_CLIENT_SECRET',
  'PIX_API_CERT_FILE',
  'PIX_API_KEY_FILE',
  'PIX_API_RECEIVER_KEY',
] as const;

export const API_PIX_VARIABLES = {
  // Which PIX provider collects the BRL (docs/api-pix.md): today's provider API, or any Brazilian
  // bank or payment institution through the Central Bank's standard API Pix.
  PIX_PROVIDER: z.enum(PIX_PROVIDERS).default('provider-api'),
  // API Pix (PIX_PROVIDER=bcb-api-pix): the base URL `/cob/{txid}` is appended to, the OAuth2 token
  // endpoint (default: /oauth/token on the base URL's host), the OAuth client, the mutual-TLS files and
  // the receiver's PIX key every charge pays into.
  PIX_API_URL: optional(z.url({ protocol: /^https$/, error: 'must be an https URL' })),
  PIX_API_TOKEN_URL: optional(z.url({ protocol: /^https$/, error: 'must be an https URL' })),
  PIX_API_CLIENT_ID: optional(z.string().min(1)),
  PIX_API_CLIENT_SECRET: optional(z.string().min(1)),
  PIX_API_SCOPES: optional(z.string().regex(/^[\w.:-]+( [\w.:-]+)*$/, 'must be space-separated scopes')),
  PIX_API_CERT_FILE: optional(z.string().min(1)),
  PIX_API_KEY_FILE: optional(z.string().min(1)),
  PIX_API_CA_FILE: optional(z.string().min(1)),
  PIX_API_RECEIVER_KEY: optional(z.string().min(1).max(77)),
  PIX_API_PAYER_MESSAGE: z.string().min(1).max(140).default('Pagamento convertido em USDT'),
};

export const API_PIX_CLIENT = [
  'PIX_PROVIDER',
  ...API_PIX_REQUIRED,
  'PIX_API_TOKEN_URL',
  'PIX_API_SCOPES',
  'PIX_API_CA_FILE',
  'PIX_API_PAYER_MESSAGE',
  'PROVIDER_TIMEOUT_MS',
] as const;

export const apiPixRules: ConfigRule = (env, reads) => {
  const issues: ConfigIssue[] = [];
  // API Pix collects BRL only: the USDT must come from the treasury (docs/api-pix.md).
  if (reads.has('PIX_PROVIDER') && reads.has('SETTLEMENT_MODE') && env.PIX_PROVIDER === 'bcb-api-pix') {
    if (env.SETTLEMENT_MODE !== 'treasury') {
      issues.push({
        code: 'custom',
        path: ['PIX_PROVIDER'],
        message:
          'bcb-api-pix needs SETTLEMENT_MODE=treasury: an API Pix institution collects BRL and sends no USDT',
      });
    }
  }
  if (reads.has('PIX_API_URL') && env.PIX_PROVIDER === 'bcb-api-pix') {
    for (const name of API_PIX_REQUIRED) {
      if (!env[name]) {
        issues.push({
          code: 'custom',
          path: [name],
          message: 'is required when PIX_PROVIDER=bcb-api-pix',
        });
      }
    }
  }
  return issues;
};
