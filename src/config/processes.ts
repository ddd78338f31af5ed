import { API_PIX_CLIENT } from './api-pix';
import { SETTLEMENT_NETWORK } from './chain';
import { PROVIDER_CLIENT } from './provider';
import { DATABASE, PAYLOAD_KEYS, TEMPORAL_CONNECTION } from './shared';
import type { Variable } from './variables';

/**
 * Which process reads which variable: each validates only these, so a variable one process needs
 * never stops another (docs/configuration.md says the same; a test compares them).
 */

export const API = [
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
  'API_CREATES_CHARGES',
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

export const WORKER = [
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
  'WORKER_WORKFLOW_STACK_TRACES',
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

export const MIGRATE = ['LOG_LEVEL', 'DATABASE_URL'] as const;

// The admin CLI reads each part only for the commands that need it: `partner create` never looks
// at Temporal or the payload keys.
export const ADMIN_DATABASE = ['DATABASE_URL'] as const;
export const ADMIN_TEMPORAL = [...TEMPORAL_CONNECTION, 'TEMPORAL_WORKER_DEPLOYMENT_NAME'] as const;
export const ADMIN_PAYLOAD_KEYS = PAYLOAD_KEYS;
export const ADMIN_CALLBACKS = [...PAYLOAD_KEYS, 'CALLBACK_ALLOW_PRIVATE_NETWORKS'] as const;
export const ADMIN_PAYOUTS = SETTLEMENT_NETWORK;
// `admin pix webhook`: the institution's webhook registration, and the URL it points at by default.
export const ADMIN_API_PIX = [...API_PIX_CLIENT, 'PUBLIC_BASE_URL', 'PROVIDER_NAME'] as const;

/** Which process reads which variable, the admin CLI's parts together. */
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
