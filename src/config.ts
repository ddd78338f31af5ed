import { loadClientConfigProfile } from '@temporalio/envconfig';
import { privateKeyToAddress } from 'viem/accounts';
import { z } from 'zod';
import { SCREENING_SOURCES, type ScreeningSource } from './domain/screening';
import {
  DEFAULT_AUTO_RETURN_KINDS,
  NEVER_AUTO_RETURN_KINDS,
  REFUND_KINDS,
  type RefundKind,
} from './domain/refund';
import { parsePayloadKey } from './adapters/secrets/payload-keys';
import { temporalConfigEnv } from './temporal/config-file-env';
import { BUILD_ID_PATTERN } from './temporal/worker-versioning';

/**
 * Every setting of the service's processes: each variable is defined once (VARIABLES), and each
 * process reads and validates only the ones it uses (the lists below), so a variable one process
 * needs never stops another. Read from the environment once, by the process's composition root in
 * src/main/. Defaults are the local stack (docs/decisions.md D2), so `npm start` needs no env at
 * all; a bad value stops the process with a message that names the variable.
 * docs/configuration.md lists them with the processes that read them (a test compares the two).
 */

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

const decimalString = z.string().regex(/^\d+(\.\d+)?$/, 'must be a non-negative decimal number');
const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);
const bool = (def: boolean) =>
  z
    .enum(['true', 'false', '1', '0'])
    .default(def ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1');
const hex = z.string().regex(/^0x[0-9a-fA-F]+$/, 'must be 0x-prefixed hex');
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address');

export const QUOTE_SOURCES = ['provider', 'price-feeds', 'static'] as const;
export type QuoteSourceName = (typeof QUOTE_SOURCES)[number];

/** QUOTE_SOURCE as set, else the settlement mode's own: the feeds in treasury mode, the provider's quote otherwise. */
export function effectiveQuoteSource(env: {
  QUOTE_SOURCE?: unknown;
  SETTLEMENT_MODE?: unknown;
}): QuoteSourceName {
  if (typeof env.QUOTE_SOURCE === 'string' && (QUOTE_SOURCES as readonly string[]).includes(env.QUOTE_SOURCE))
    return env.QUOTE_SOURCE as QuoteSourceName;
  return env.SETTLEMENT_MODE === 'treasury' ? 'price-feeds' : 'provider';
}
const optional = <T extends z.ZodTypeAny>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());
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

const VARIABLES = {
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  HOST: z.string().default('127.0.0.1'),
  // Proxies in front of the api whose X-Forwarded-For is believed: a comma-separated list of
  // addresses or CIDRs, or a number of hops. Unset, the client address is the TCP peer's.
  TRUST_PROXY: optional(
    z
      .string()
      .regex(/^(\d{1,2}|[0-9a-fA-F.:/]+(,\s*[0-9a-fA-F.:/]+)*)$/, 'must be a hop count or addresses/CIDRs'),
  ),
  PORT: int(3000),
  METRICS_PORT: int(9464),
  WORKER_METRICS_PORT: int(9465),
  PUBLIC_BASE_URL: optional(z.url()),

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
  // A workflow bundle built ahead (bundleWorkflowCode's code written to a file): the worker starts
  // without running webpack, and every replica runs the same code. Default: dist/workflow-bundle.js
  // when running compiled, else the sources.
  WORKFLOW_BUNDLE_PATH: optional(z.string()),
  // Worker Versioning (src/temporal/worker-versioning.ts, docs/workflow-changes.md). A build id turns
  // it on: the worker polls as version <deployment>:<build id> and every workflow it starts stays on
  // that build. One build id per workflow bundle that ships (the image tag or git sha); empty, the
  // worker is unversioned and any worker may replay any history (patched() is then the only guard).
  // The server refuses ':' and '.' in deployment names.
  TEMPORAL_WORKER_DEPLOYMENT_NAME: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,200}$/, 'must be 1-200 letters, digits, _ or -')
    .default('pix-usdt-payouts'),
  TEMPORAL_WORKER_BUILD_ID: optional(
    z.string().regex(BUILD_ID_PATTERN, 'must be 1-200 letters, digits, ., _, + or -'),
  ),
  // The worker makes its own build the current version once it polls: for a single worker (local
  // stack, compose demo). A fleet promotes with `admin deploy promote` after the new build is up,
  // never this: every restarting replica of an older build would take new payouts back.
  TEMPORAL_WORKER_SET_CURRENT: bool(false),
  TEMPORAL_API_KEY: optional(z.string()),
  TEMPORAL_TLS: optional(z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1')),
  TEMPORAL_TLS_CLIENT_CERT_PATH: optional(z.string()),
  TEMPORAL_TLS_CLIENT_KEY_PATH: optional(z.string()),

  PROVIDER_NAME: z
    .string()
    .regex(/^[a-z0-9-]{1,32}$/, 'must be 1-32 lower-case letters, digits or dashes')
    .default('sandbox'),
  PROVIDER_API_URL: z.url().default('http://127.0.0.1:4000'),
  PROVIDER_API_KEY: optional(z.string()),
  PROVIDER_TIMEOUT_MS: int(10_000, 100),
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
  // The refund policy (docs/decisions.md D63): the refund kinds whose payment goes back to the payer
  // at once, comma-separated; every other kind waits for `admin refunds approve`. "none": all wait.
  REFUND_AUTO_RETURN_KINDS: z.preprocess(
    (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
    z
      .string()
      .default(DEFAULT_AUTO_RETURN_KINDS.join(','))
      .transform((v, ctx) => {
        const list = v.split(',').map((s) => s.trim());
        if (list.length === 1 && list[0] === 'none') return [] as RefundKind[];
        const unknown = list.filter((s) => !(REFUND_KINDS as readonly string[]).includes(s));
        if (unknown.length > 0) {
          ctx.addIssue({
            code: 'custom',
            message: `unknown refund kind(s) "${unknown.join('", "')}": list ${REFUND_KINDS.join(', ')}, or none alone`,
          });
          return z.NEVER;
        }
        const refused = list.filter((s) => (NEVER_AUTO_RETURN_KINDS as readonly string[]).includes(s));
        if (refused.length > 0) {
          ctx.addIssue({
            code: 'custom',
            message: `"${refused.join('", "')}" cannot return without an operator: the payment may still settle its payout`,
          });
          return z.NEVER;
        }
        return [...new Set(list)] as RefundKind[];
      }),
  ),
  QUOTE_CACHE_SECONDS: int(30, 0).refine((v) => v <= 30, 'must be at most 30 (docs/decisions.md D5)'),
  // Where the api's rate comes from (docs/decisions.md D52): the provider's quote, two Chainlink
  // feeds on the settlement chain, or the operator's own rate. Unset: the provider's in provider
  // mode, the feeds in treasury mode (a treasury deployment may have no provider quote at all).
  QUOTE_SOURCE: optional(z.enum(QUOTE_SOURCES)),
  // Chainlink feeds (AggregatorV3Interface) on the chain of EVM_RPC_URL; no default: an address is
  // always the operator's choice, checked at start.
  PRICE_FEED_BRL_USD_ADDRESS: optional(address),
  PRICE_FEED_USDT_USD_ADDRESS: optional(address),
  // A feed not updated for longer gives no rate. Chainlink's BRL/USD and USDT/USD feeds on Arbitrum
  // One update on a 0.25-0.5% move or at least every 24 h (their heartbeat); 25 h is one missed
  // heartbeat's delivery margin, never a day-old price past it (D52).
  PRICE_FEED_MAX_AGE_SECONDS: int(90_000, 60),
  // QUOTE_SOURCE=static only: the operator's rate, BRL per 1 USDT. No default anywhere.
  FX_STATIC_RATE: optional(
    decimalString.refine((v) => /[1-9]/.test(v), 'must be a positive decimal number (BRL per 1 USDT)'),
  ),

  MIN_AMOUNT_BUFFER: decimalString.default('0.06'),
  SETTLEMENT_ABOVE_QUOTE_TOLERANCE: decimalString.default('0.02'),
  MAX_AMOUNT_BRL: decimalString
    .regex(/^\d+(\.\d{1,2})?$/, 'must have at most 2 decimal places')
    .default('100000.00'),
  PIX_CHARGE_EXPIRY_SECONDS: int(3600, 60),
  SETTLEMENT_TIMEOUT_SECONDS: int(21_600, 60),
  SETTLEMENT_MODE: z.enum(['provider', 'treasury']).default('provider'),
  SETTLEMENT_CONFIRMATIONS: int(1, 1),

  EVM_RPC_URL: z.url().default('http://127.0.0.1:8545'),
  EVM_CHAIN_ID: int(42161, 1),
  // How a COMPLETED payout names its chain to partners (docs/api.md "The Payout object").
  SETTLEMENT_NETWORK_NAME: z.string().min(1).default('Arbitrum One'),
  // The block explorer of EVM_CHAIN_ID: a transfer's link is <url>/tx/<hash>.
  BLOCK_EXPLORER_URL: z.url().default('https://arbiscan.io'),
  // Tether's USDT on Arbitrum One; the local launcher overrides it with its test token.
  USDT_CONTRACT_ADDRESS: hex.default('0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9'),
  TREASURY_PRIVATE_KEY: optional(hex),
  // The treasury's address, for the api (which never holds the key): in treasury mode POST answers
  // 503 while the treasury cannot send (docs/decisions.md D25).
  TREASURY_ADDRESS: optional(
    z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address'),
  ),
  // Receiver screening (docs/screening.md): the sources checked at POST and right before the USDT
  // moves, comma-separated, any of token_blocklist, sanctions_oracle, denylist; "none" turns it off.
  SCREENING_SOURCES: z.preprocess(
    // Empty or blank is unset: the default. Only the exact word "none" turns screening off.
    (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
    z
      .string()
      .default('token_blocklist,sanctions_oracle,denylist')
      .transform((v, ctx) => {
        const list = v.split(',').map((s) => s.trim());
        if (list.length === 1 && list[0] === 'none') return [] as ScreeningSource[];
        const unknown = list.filter((s) => !(SCREENING_SOURCES as readonly string[]).includes(s));
        if (unknown.length > 0) {
          ctx.addIssue({
            code: 'custom',
            message: `unknown source(s) "${unknown.join('", "')}": list ${SCREENING_SOURCES.join(', ')}, or none alone`,
          });
          return z.NEVER;
        }
        return [...new Set(list)] as ScreeningSource[];
      }),
  ),
  // Chainalysis' sanctions oracle, at this address on Arbitrum One (docs/screening.md); the local
  // launcher overrides it with its test oracle.
  SANCTIONS_ORACLE_ADDRESS: hex.default('0x40C57923924B5c5c5455c48D93317139ADDaC8fb'),
  // How long a wallet's screening verdict is reused (POST and the step before sending).
  SCREENING_CACHE_SECONDS: int(5, 0).refine((v) => v <= 300, 'must be at most 300'),
  // Treasury mode: how long a signed transfer may wait unmined before it is signed again at the same
  // nonce with higher fees (only when the network now asks more than it offers).
  TREASURY_REPRICE_AFTER_SECONDS: int(120, 10),

  // Workflows the worker keeps in memory between tasks (its sticky cache). A cached workflow answers
  // a query or takes its next event without replaying its history; an evicted one is replayed on its
  // next task. Measured here at about 0.8 MiB of worker RSS per cached payout workflow, so 1000 keeps
  // a worker under 1 GiB however many payouts are open (docs/BENCHMARKS.md). 0 disables the cache.
  WORKER_MAX_CACHED_WORKFLOWS: int(1000, 0),
  // On SIGTERM the worker stops polling and lets running activity attempts finish for this long
  // before cancelling them: the longest attempt a workflow allows (startToCloseTimeout) is 60 s.
  // A container's stop grace period must be longer (docker-compose.yml: stop_grace_period).
  WORKER_SHUTDOWN_GRACE_SECONDS: int(60, 0),

  POST_RATE_LIMIT_PER_MINUTE: int(100, 1),
  READ_RATE_LIMIT_PER_MINUTE: int(600, 1),
  // Requests to /v1/callback* per partner (all its keys together), apart from the two above: a test
  // event makes the api connect out, so these never spend the payout quota (docs/decisions.md D68).
  CALLBACK_RATE_LIMIT_PER_MINUTE: int(30, 1),
  // New provider-webhook tokens per client address (a repeated token is never throttled).
  WEBHOOK_RATE_LIMIT_PER_MINUTE: int(600, 1),
  // Missing or invalid API keys per client address; a valid key is never refused by it.
  AUTH_FAILURE_LIMIT_PER_MINUTE: int(60, 1),

  // 32 bytes (AES-256), as 64 hex digits or base64 (`openssl rand -base64 32`).
  PAYLOAD_ENCRYPTION_KEY: optional(payloadKey),
  // Keys being rotated out: still decrypt the histories written under them, never encrypt.
  PAYLOAD_ENCRYPTION_PREVIOUS_KEYS: optional(payloadKeyList),
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
  // OpenTelemetry traces go to this OTLP/HTTP endpoint (<url>/v1/traces); unset, tracing is off.
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(z.url({ protocol: /^https?$/ })),
  CALLBACK_ALLOW_PRIVATE_NETWORKS: bool(false),
  // One partner callback attempt, DNS to response; the delivery activity's own timeout is 1 minute.
  CALLBACK_TIMEOUT_MS: int(10_000, 100).refine((v) => v <= 30_000, 'must be at most 30000'),
};

type Variable = keyof typeof VARIABLES;

// Groups read together by more than one process.
const TEMPORAL_CONNECTION = [
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_PROFILE',
  'TEMPORAL_API_KEY',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
] as const;
// NODE_ENV goes with the keys: production refuses to run without one.
const PAYLOAD_KEYS = ['NODE_ENV', 'PAYLOAD_ENCRYPTION_KEY', 'PAYLOAD_ENCRYPTION_PREVIOUS_KEYS'] as const;
const DATABASE = ['DATABASE_URL', 'DATABASE_POOL_SIZE'] as const;
const PROVIDER_CLIENT = ['PROVIDER_API_URL', 'PROVIDER_API_KEY', 'PROVIDER_TIMEOUT_MS'] as const;
const API_PIX_CLIENT = [
  'PIX_PROVIDER',
  ...API_PIX_REQUIRED,
  'PIX_API_TOKEN_URL',
  'PIX_API_SCOPES',
  'PIX_API_CA_FILE',
  'PIX_API_PAYER_MESSAGE',
  'PROVIDER_TIMEOUT_MS',
] as const;
// What a COMPLETED payout shows of its chain, wherever a payout is answered.
const SETTLEMENT_NETWORK = ['EVM_CHAIN_ID', 'SETTLEMENT_NETWORK_NAME', 'BLOCK_EXPLORER_URL'] as const;

const API = [
  'LOG_LEVEL',
  'HOST',
  'TRUST_PROXY',
  'PORT',
  'METRICS_PORT',
  'PUBLIC_BASE_URL',
  ...DATABASE,
  ...TEMPORAL_CONNECTION,
  'TEMPORAL_TASK_QUEUE',
  'PROVIDER_NAME',
  // Which webhook the provider sends (and that settlement must then be the treasury's).
  'PIX_PROVIDER',
  ...PROVIDER_CLIENT,
  'QUOTE_CACHE_SECONDS',
  'QUOTE_SOURCE',
  'PRICE_FEED_BRL_USD_ADDRESS',
  'PRICE_FEED_USDT_USD_ADDRESS',
  'PRICE_FEED_MAX_AGE_SECONDS',
  'FX_STATIC_RATE',
  'MIN_AMOUNT_BUFFER',
  'SETTLEMENT_ABOVE_QUOTE_TOLERANCE',
  'MAX_AMOUNT_BRL',
  'PIX_CHARGE_EXPIRY_SECONDS',
  'SETTLEMENT_TIMEOUT_SECONDS',
  'SETTLEMENT_MODE',
  'SETTLEMENT_CONFIRMATIONS',
  ...SETTLEMENT_NETWORK,
  // Screening at POST reads the token's blocklist and the oracle on chain.
  'EVM_RPC_URL',
  'USDT_CONTRACT_ADDRESS',
  'SCREENING_SOURCES',
  'SANCTIONS_ORACLE_ADDRESS',
  'SCREENING_CACHE_SECONDS',
  'TREASURY_ADDRESS',
  'POST_RATE_LIMIT_PER_MINUTE',
  'READ_RATE_LIMIT_PER_MINUTE',
  'CALLBACK_RATE_LIMIT_PER_MINUTE',
  'WEBHOOK_RATE_LIMIT_PER_MINUTE',
  'AUTH_FAILURE_LIMIT_PER_MINUTE',
  ...PAYLOAD_KEYS,
  // Partners set their callback URL and send themselves a test event through the api (D65).
  'CALLBACK_ALLOW_PRIVATE_NETWORKS',
  'CALLBACK_TIMEOUT_MS',
  'CODEC_AUTH_TOKEN',
  'CODEC_CORS_ORIGINS',
  'CODEC_OIDC_JWKS_URL',
  'CODEC_OIDC_ISSUER',
  'CODEC_OIDC_AUDIENCE',
  'CODEC_OIDC_ALLOWED_USERS',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
] as const;

const WORKER = [
  'LOG_LEVEL',
  'HOST',
  'WORKER_METRICS_PORT',
  ...DATABASE,
  ...TEMPORAL_CONNECTION,
  'TEMPORAL_TASK_QUEUE',
  'WORKFLOW_BUNDLE_PATH',
  'TEMPORAL_WORKER_DEPLOYMENT_NAME',
  'TEMPORAL_WORKER_BUILD_ID',
  'TEMPORAL_WORKER_SET_CURRENT',
  'WORKER_MAX_CACHED_WORKFLOWS',
  'WORKER_SHUTDOWN_GRACE_SECONDS',
  ...PROVIDER_CLIENT,
  ...API_PIX_CLIENT,
  // Read to refuse a start in treasury mode without the key the transfers need.
  'SETTLEMENT_MODE',
  'EVM_RPC_URL',
  ...SETTLEMENT_NETWORK,
  'USDT_CONTRACT_ADDRESS',
  'TREASURY_PRIVATE_KEY',
  'TREASURY_REPRICE_AFTER_SECONDS',
  'SCREENING_SOURCES',
  'SANCTIONS_ORACLE_ADDRESS',
  'REFUND_AUTO_RETURN_KINDS',
  ...PAYLOAD_KEYS,
  'CALLBACK_ALLOW_PRIVATE_NETWORKS',
  'CALLBACK_TIMEOUT_MS',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
] as const;

const MIGRATE = ['LOG_LEVEL', 'DATABASE_URL'] as const;

// The admin CLI reads each part only for the commands that need it: `partner create` never looks
// at Temporal or the payload keys.
const ADMIN_DATABASE = ['DATABASE_URL'] as const;
const ADMIN_TEMPORAL = [...TEMPORAL_CONNECTION, 'TEMPORAL_WORKER_DEPLOYMENT_NAME'] as const;
const ADMIN_PAYLOAD_KEYS = PAYLOAD_KEYS;
const ADMIN_CALLBACKS = [...PAYLOAD_KEYS, 'CALLBACK_ALLOW_PRIVATE_NETWORKS'] as const;
const ADMIN_PAYOUTS = SETTLEMENT_NETWORK;
// `admin pix webhook`: the institution's webhook registration, and the URL it points at by default.
const ADMIN_API_PIX = [...API_PIX_CLIENT, 'PUBLIC_BASE_URL', 'PROVIDER_NAME'] as const;

/** Which process reads which variable (docs/configuration.md says the same). */
export const PROCESS_VARIABLES: Record<'api' | 'worker' | 'migrate' | 'admin', readonly Variable[]> = {
  api: API,
  worker: WORKER,
  migrate: MIGRATE,
  admin: [
    ...new Set([
      ...ADMIN_DATABASE,
      ...ADMIN_TEMPORAL,
      ...ADMIN_PAYLOAD_KEYS,
      ...ADMIN_CALLBACKS,
      ...ADMIN_PAYOUTS,
      ...ADMIN_API_PIX,
    ]),
  ],
};

/** Every variable some process reads (docker-compose.yml is checked against it). */
export const CONFIG_KEYS: readonly string[] = Object.keys(VARIABLES);

export class ConfigError extends Error {}

function schemaOf<K extends Variable>(names: readonly K[]) {
  const shape = Object.fromEntries(names.map((name) => [name, VARIABLES[name]])) as Pick<typeof VARIABLES, K>;
  const reads = new Set<string>(names);
  return z.object(shape).superRefine((env: Record<string, unknown>, ctx) => {
    if (
      reads.has('TREASURY_PRIVATE_KEY') &&
      env.SETTLEMENT_MODE === 'treasury' &&
      !env.TREASURY_PRIVATE_KEY
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['TREASURY_PRIVATE_KEY'],
        message: 'is required when SETTLEMENT_MODE=treasury',
      });
    }
    // PIX keys (a CPF is personal data) travel in workflow payloads, and partners' callback secrets
    // are sealed with the same keys: production never stores them in clear.
    if (reads.has('TREASURY_ADDRESS') && env.SETTLEMENT_MODE === 'treasury' && !env.TREASURY_ADDRESS) {
      ctx.addIssue({
        code: 'custom',
        path: ['TREASURY_ADDRESS'],
        message:
          'is required when SETTLEMENT_MODE=treasury (the api refuses new payouts while it cannot send)',
      });
    }
    if (reads.has('QUOTE_SOURCE')) quoteSourceIssues(env).forEach((issue) => ctx.addIssue(issue));
    // API Pix collects BRL only: the USDT must come from the treasury (docs/api-pix.md).
    if (reads.has('PIX_PROVIDER') && reads.has('SETTLEMENT_MODE') && env.PIX_PROVIDER === 'bcb-api-pix') {
      if (env.SETTLEMENT_MODE !== 'treasury') {
        ctx.addIssue({
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
          ctx.addIssue({
            code: 'custom',
            path: [name],
            message: 'is required when PIX_PROVIDER=bcb-api-pix',
          });
        }
      }
    }
    // An access token is checked against its issuer: keys without one would refuse everybody silently.
    if (reads.has('CODEC_OIDC_ISSUER') && env.CODEC_OIDC_JWKS_URL && !env.CODEC_OIDC_ISSUER) {
      ctx.addIssue({
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
      ctx.addIssue({
        code: 'custom',
        path: ['CODEC_OIDC_AUDIENCE'],
        message:
          'is required with CODEC_OIDC_JWKS_URL when NODE_ENV=production (else an access token for any other application of the issuer would do)',
      });
    }
    if (reads.has('PAYLOAD_ENCRYPTION_KEY') && env.NODE_ENV === 'production' && !env.PAYLOAD_ENCRYPTION_KEY) {
      ctx.addIssue({
        code: 'custom',
        path: ['PAYLOAD_ENCRYPTION_KEY'],
        message: 'is required when NODE_ENV=production',
      });
    }
  });
}

/** A quote source without what it reads, or a rate given to a source that would ignore it. */
function quoteSourceIssues(
  env: Record<string, unknown>,
): { code: 'custom'; path: string[]; message: string }[] {
  const source = effectiveQuoteSource(env);
  const why = env.QUOTE_SOURCE
    ? `QUOTE_SOURCE=${source}`
    : `QUOTE_SOURCE=${source} (the default in treasury mode)`;
  const issues: { code: 'custom'; path: string[]; message: string }[] = [];
  if (source === 'price-feeds') {
    for (const name of ['PRICE_FEED_BRL_USD_ADDRESS', 'PRICE_FEED_USDT_USD_ADDRESS'])
      if (!env[name]) issues.push({ code: 'custom', path: [name], message: `is required when ${why}` });
  }
  if (source === 'static' && !env.FX_STATIC_RATE)
    issues.push({
      code: 'custom',
      path: ['FX_STATIC_RATE'],
      message: 'is required when QUOTE_SOURCE=static (there is no default rate)',
    });
  // An API Pix institution quotes nothing: its deployments have no provider to ask. (Outside treasury
  // mode the settlement mode is what is wrong, and says so.)
  if (source === 'provider' && env.PIX_PROVIDER === 'bcb-api-pix' && env.SETTLEMENT_MODE === 'treasury')
    issues.push({
      code: 'custom',
      path: ['QUOTE_SOURCE'],
      message: 'provider is not a rate source with PIX_PROVIDER=bcb-api-pix: use price-feeds or static',
    });
  if (source !== 'static' && env.FX_STATIC_RATE)
    issues.push({
      code: 'custom',
      path: ['FX_STATIC_RATE'],
      message: `is read only when QUOTE_SOURCE=static, not with ${why}: unset it or set QUOTE_SOURCE=static`,
    });
  return issues;
}

/**
 * Address and namespace from the Temporal config file's profile (TEMPORAL_PROFILE, else `default`)
 * where the environment does not set them, as the `temporal` CLI resolves them. No file, no change.
 */
function withTemporalProfile(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  if (env.TEMPORAL_ADDRESS && env.TEMPORAL_NAMESPACE) return env;
  let profile: { address?: string; namespace?: string };
  try {
    profile = loadClientConfigProfile({ overrideEnvVars: temporalConfigEnv(env) });
  } catch (err) {
    throw new ConfigError(
      `invalid configuration: TEMPORAL_PROFILE ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  return {
    ...env,
    TEMPORAL_ADDRESS: env.TEMPORAL_ADDRESS || profile.address,
    TEMPORAL_NAMESPACE: env.TEMPORAL_NAMESPACE || profile.namespace,
  };
}

/** The loader of one process (or one part of the admin CLI): its variables, validated. */
function loaderOf<K extends Variable>(names: readonly K[]) {
  const schema = schemaOf(names);
  const readsTemporal = names.some((name) => name === 'TEMPORAL_ADDRESS');
  return (env: NodeJS.ProcessEnv = process.env): z.infer<typeof schema> => {
    const parsed = schema.safeParse(readsTemporal ? withTemporalProfile(env) : env);
    if (parsed.success) return parsed.data;
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || '(env)'} ${issue.message}`,
    );
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  };
}

const loadApiSettings = loaderOf(API);
/**
 * The api's settings. In treasury mode it needs the treasury's address; given only the worker's key
 * (one environment for both processes), the address is derived from it and the key is not kept.
 */
export const loadApiConfig = (
  env: NodeJS.ProcessEnv = process.env,
): ReturnType<typeof loadApiSettings> & { QUOTE_SOURCE: QuoteSourceName } => {
  const key = env.TREASURY_PRIVATE_KEY;
  const settings =
    env.TREASURY_ADDRESS || !key || !/^0x[0-9a-fA-F]{64}$/.test(key)
      ? loadApiSettings(env)
      : loadApiSettings({ ...env, TREASURY_ADDRESS: privateKeyToAddress(key as `0x${string}`) });
  return { ...settings, QUOTE_SOURCE: effectiveQuoteSource(settings) };
};
export const loadWorkerConfig = loaderOf(WORKER);
export const loadMigrateConfig = loaderOf(MIGRATE);
export const loadAdminDatabaseConfig = loaderOf(ADMIN_DATABASE);
export const loadAdminTemporalConfig = loaderOf(ADMIN_TEMPORAL);
export const loadAdminPayloadKeysConfig = loaderOf(ADMIN_PAYLOAD_KEYS);
export const loadAdminCallbacksConfig = loaderOf(ADMIN_CALLBACKS);
export const loadAdminPayoutsConfig = loaderOf(ADMIN_PAYOUTS);
export const loadAdminApiPixConfig = loaderOf(ADMIN_API_PIX);

export type ApiConfig = ReturnType<typeof loadApiConfig>;
export type WorkerConfig = ReturnType<typeof loadWorkerConfig>;
