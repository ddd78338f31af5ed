import type { CallbackSenderOptions } from '../adapters/callbacks/http-sender';
import type { CallbackUrlPolicy } from '../adapters/callbacks/url-guard';
import { createHttpProvider } from '../adapters/provider/http-provider';
import type {
  PaymentProvider,
  PaymentReturns,
  PixCollection,
  SettlementProvider,
} from '../adapters/provider/types';
import { ProviderError } from '../adapters/provider/types';
import { readFileSync } from 'node:fs';
import { createApiPixProvider, type PixWebhookAdmin } from '../adapters/provider/api-pix/api-pix-provider';
import { createMtlsTransport } from '../adapters/provider/api-pix/mtls-transport';
import { createTokenSource } from '../adapters/provider/api-pix/oauth-token';
import { payloadKeys, type PayloadKeys } from '../adapters/secrets/payload-keys';
import { createSecretBox } from '../adapters/secrets/secret-box';
import type { PartnerCallbacks } from '../api/callbacks/callback.routes';
import type { ProviderEventReader } from '../api/webhooks/direct-delivery';
import { API_CHARGE_WAIT_MS } from '../api/payouts/start-payout';
import type { ApiConfig, WorkerConfig } from '../config';
import type { SettlementNetwork } from '../domain/payout';
import type { Metrics } from '../observability/metrics';
import type { Db } from '../adapters/db/pool';
import { createChainAndDenylistScreening } from '../adapters/screening/receiver-screening';
import { createCachedQuote } from '../adapters/provider/quote-cache';
import type { QuoteSource } from '../adapters/rates/cached-quote';
import { createPriceFeeds, priceFeedChainClient, type PriceFeeds } from '../adapters/rates/price-feeds';
import { createStaticRate } from '../adapters/rates/static-rate';
import type { Address } from 'viem';

// Settings turned into the adapters' own options the same way by every process that needs them.

/** The provider client as the api and the worker run it: configured, with its calls measured. */
export function measuredProvider(
  config: Pick<ApiConfig & WorkerConfig, 'PROVIDER_API_URL' | 'PROVIDER_API_KEY' | 'PROVIDER_TIMEOUT_MS'>,
  metrics: Pick<Metrics, 'providerCallDuration'>,
): PaymentProvider {
  return createHttpProvider({
    baseUrl: config.PROVIDER_API_URL,
    apiKey: config.PROVIDER_API_KEY,
    timeoutMs: config.PROVIDER_TIMEOUT_MS,
    onCall: (m) =>
      metrics.providerCallDuration.observe(
        { operation: m.operation, outcome: m.outcome },
        m.durationMs / 1000,
      ),
  });
}

/**
 * The api's PIX charge creator (D81): the provider API's idempotent charge request, as the worker's
 * activity makes it, cut off where POST stops waiting for it and leaves the charge to the workflow.
 * None for API Pix, whose mTLS client only the worker holds, and none with API_CREATES_CHARGES off.
 */
export function apiChargeCreatorOf(
  config: Pick<
    ApiConfig,
    'PIX_PROVIDER' | 'API_CREATES_CHARGES' | 'PROVIDER_API_URL' | 'PROVIDER_API_KEY' | 'PROVIDER_TIMEOUT_MS'
  >,
  metrics: Pick<Metrics, 'providerCallDuration'>,
): PaymentProvider['createCharge'] | undefined {
  if (config.PIX_PROVIDER !== 'provider-api' || !config.API_CREATES_CHARGES) return undefined;
  const provider = measuredProvider(
    { ...config, PROVIDER_TIMEOUT_MS: Math.min(config.PROVIDER_TIMEOUT_MS, API_CHARGE_WAIT_MS) },
    metrics,
  );
  return (req) => provider.createCharge(req);
}

/**
 * How long the api waits for the provider when it reads a webhook's event back itself (D77): past it
 * the event goes to its provider-event workflow, which retries, and the webhook is answered at once.
 */
const DIRECT_READ_DEADLINE_MS = 2_000;

/**
 * After a read that failed (a timeout, a 5xx), the api leaves every event to its workflow for this
 * long: during a provider outage each webhook is then answered at once instead of after the deadline.
 */
const DIRECT_READ_PAUSE_AFTER_FAILURE_MS = 10_000;

/** The provider API's events as the api reads them back to signal payouts itself (D77). */
export function providerEventReaderOf(
  config: Pick<ApiConfig, 'PROVIDER_API_URL' | 'PROVIDER_API_KEY' | 'PROVIDER_TIMEOUT_MS'>,
  metrics: Pick<Metrics, 'providerCallDuration'>,
): ProviderEventReader {
  const provider = measuredProvider(
    { ...config, PROVIDER_TIMEOUT_MS: Math.min(config.PROVIDER_TIMEOUT_MS, DIRECT_READ_DEADLINE_MS) },
    metrics,
  );
  let pausedUntil = 0;
  return async (token) => {
    if (Date.now() < pausedUntil) throw new Error('provider reads paused after a failed read');
    try {
      return await provider.fetchNotification(token);
    } catch (err) {
      if (err instanceof ProviderError && err.code === 'unknown_notification') return null;
      pausedUntil = Date.now() + DIRECT_READ_PAUSE_AFTER_FAILURE_MS;
      throw err;
    }
  };
}

type ApiPixSettings = Pick<
  WorkerConfig,
  | 'PIX_API_URL'
  | 'PIX_API_TOKEN_URL'
  | 'PIX_API_CLIENT_ID'
  | 'PIX_API_CLIENT_SECRET'
  | 'PIX_API_SCOPES'
  | 'PIX_API_CERT_FILE'
  | 'PIX_API_KEY_FILE'
  | 'PIX_API_CA_FILE'
  | 'PIX_API_RECEIVER_KEY'
  | 'PIX_API_PAYER_MESSAGE'
  | 'PROVIDER_TIMEOUT_MS'
>;

/**
 * The API Pix client (PIX_PROVIDER=bcb-api-pix) from its settings. The certificate files are read
 * here, once, so a missing or unreadable file stops the process at start naming its setting.
 */
export function apiPixProviderOf(
  config: ApiPixSettings,
  metrics?: Pick<Metrics, 'providerCallDuration'>,
): PixCollection & PaymentReturns & PixWebhookAdmin {
  const read = (name: 'PIX_API_CERT_FILE' | 'PIX_API_KEY_FILE' | 'PIX_API_CA_FILE'): Buffer | undefined => {
    const file = config[name];
    if (file === undefined) return undefined;
    try {
      return readFileSync(file);
    } catch (err) {
      throw new Error(
        `invalid configuration: ${name} ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
      );
    }
  };
  const baseUrl = required(config.PIX_API_URL, 'PIX_API_URL');
  const ca = read('PIX_API_CA_FILE');
  const transport = createMtlsTransport(
    {
      cert: required(read('PIX_API_CERT_FILE'), 'PIX_API_CERT_FILE'),
      key: required(read('PIX_API_KEY_FILE'), 'PIX_API_KEY_FILE'),
      ...(ca !== undefined && { ca }),
    },
    config.PROVIDER_TIMEOUT_MS,
  );
  const tokens = createTokenSource({
    transport,
    tokenUrl: config.PIX_API_TOKEN_URL ?? new URL('/oauth/token', baseUrl).toString(),
    clientId: required(config.PIX_API_CLIENT_ID, 'PIX_API_CLIENT_ID'),
    clientSecret: required(config.PIX_API_CLIENT_SECRET, 'PIX_API_CLIENT_SECRET'),
    ...(config.PIX_API_SCOPES !== undefined && { scope: config.PIX_API_SCOPES }),
  });
  return createApiPixProvider({
    transport,
    tokens,
    baseUrl,
    receiverKey: required(config.PIX_API_RECEIVER_KEY, 'PIX_API_RECEIVER_KEY'),
    payerMessage: config.PIX_API_PAYER_MESSAGE,
    ...(metrics && {
      onCall: (m) =>
        metrics.providerCallDuration.observe(
          { operation: m.operation, outcome: m.outcome },
          m.durationMs / 1000,
        ),
    }),
  });
}

/**
 * The worker's providers: who collects the BRL (and returns it to a payer), and who (if anyone) sends
 * the USDT for a payout in provider settlement mode. Today's provider API does all of it; an API Pix
 * institution collects and returns (devolução) only.
 */
export function pixRailsOf(
  config: ApiPixSettings &
    Pick<WorkerConfig, 'PIX_PROVIDER' | 'PROVIDER_API_URL' | 'PROVIDER_API_KEY' | 'PROVIDER_TIMEOUT_MS'>,
  metrics: Pick<Metrics, 'providerCallDuration'>,
): {
  collection: PixCollection;
  returns?: PaymentReturns;
  settlement?: SettlementProvider;
  webhooks?: PixWebhookAdmin;
} {
  if (config.PIX_PROVIDER === 'bcb-api-pix') {
    const institution = apiPixProviderOf(config, metrics);
    return { collection: institution, returns: institution, webhooks: institution };
  }
  const provider = measuredProvider(config, metrics);
  return { collection: provider, returns: provider, settlement: provider };
}

/** Config validation already refused a missing value; this names it should that ever change. */
function required<T>(value: T | undefined, name: string): T {
  if (value === undefined) throw new Error(`invalid configuration: ${name} is required`);
  return value;
}

export function payloadKeysOf(config: {
  PAYLOAD_ENCRYPTION_KEY?: string | undefined;
  PAYLOAD_ENCRYPTION_PREVIOUS_KEYS?: string | undefined;
}): PayloadKeys {
  return payloadKeys(config.PAYLOAD_ENCRYPTION_KEY, config.PAYLOAD_ENCRYPTION_PREVIOUS_KEYS);
}

/** The same callback URL rules when the admin CLI sets a URL and when the worker sends to it. */
export function callbackUrlPolicyOf(config: {
  NODE_ENV: string;
  CALLBACK_ALLOW_PRIVATE_NETWORKS: boolean;
}): CallbackUrlPolicy {
  return {
    requireHttps: config.NODE_ENV === 'production',
    allowPrivateNetworks: config.CALLBACK_ALLOW_PRIVATE_NETWORKS,
  };
}

export function callbackSenderOptionsOf(
  config: Pick<WorkerConfig, 'NODE_ENV' | 'CALLBACK_ALLOW_PRIVATE_NETWORKS' | 'CALLBACK_TIMEOUT_MS'>,
): CallbackSenderOptions {
  return { ...callbackUrlPolicyOf(config), timeoutMs: config.CALLBACK_TIMEOUT_MS };
}

/** What a COMPLETED payout names of its chain, in answers, callbacks and the admin CLI alike. */
export function settlementNetworkOf(config: {
  EVM_CHAIN_ID: number;
  SETTLEMENT_NETWORK_NAME: string;
  BLOCK_EXPLORER_URL: string;
}): SettlementNetwork {
  return {
    name: config.SETTLEMENT_NETWORK_NAME,
    chainId: config.EVM_CHAIN_ID,
    explorerUrl: config.BLOCK_EXPLORER_URL,
  };
}

/** Runs a process's main: a failure to start or to stop is one line on stderr and exit code 1. */
export function runProcess(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}

/** Receiver screening as the api (at POST) and the worker (before sending) run it: the same sources. */
export function screeningOf(
  config: Pick<
    ApiConfig & WorkerConfig,
    | 'EVM_RPC_URL'
    | 'USDT_CONTRACT_ADDRESS'
    | 'SANCTIONS_ORACLE_ADDRESS'
    | 'SCREENING_SOURCES'
    | 'SCREENING_CACHE_SECONDS'
  >,
  db: Db,
): ReturnType<typeof createChainAndDenylistScreening> {
  return createChainAndDenylistScreening({
    rpcUrl: config.EVM_RPC_URL,
    db,
    sources: config.SCREENING_SOURCES,
    tokenAddress: config.USDT_CONTRACT_ADDRESS,
    oracleAddress: config.SANCTIONS_ORACLE_ADDRESS,
    cacheSeconds: config.SCREENING_CACHE_SECONDS,
  });
}

/**
 * The api's rate from its QUOTE_SOURCE (docs/decisions.md D52), cached QUOTE_CACHE_SECONDS, with the
 * feeds themselves when they are the source (their start check and gauges). Config has checked that
 * the source has what it reads.
 */
export function quoteSourceOf(
  config: Pick<
    ApiConfig,
    | 'QUOTE_SOURCE'
    | 'QUOTE_CACHE_SECONDS'
    | 'EVM_RPC_URL'
    | 'PRICE_FEED_BRL_USD_ADDRESS'
    | 'PRICE_FEED_USDT_USD_ADDRESS'
    | 'PRICE_FEED_MAX_AGE_SECONDS'
    | 'FX_STATIC_RATE'
  >,
  provider: Pick<PaymentProvider, 'getQuote'>,
): { quote: QuoteSource; feeds?: PriceFeeds } {
  const cacheMs = config.QUOTE_CACHE_SECONDS * 1000;
  switch (config.QUOTE_SOURCE) {
    case 'provider':
      return { quote: createCachedQuote(provider, { ttlMs: cacheMs }) };
    case 'static':
      return { quote: createStaticRate(config.FX_STATIC_RATE!, { cacheMs }) };
    case 'price-feeds': {
      const feeds = createPriceFeeds({
        chain: priceFeedChainClient(config.EVM_RPC_URL),
        settings: {
          brlUsd: config.PRICE_FEED_BRL_USD_ADDRESS as Address,
          usdtUsd: config.PRICE_FEED_USDT_USD_ADDRESS as Address,
          maxAgeSeconds: config.PRICE_FEED_MAX_AGE_SECONDS,
          cacheMs,
        },
      });
      return { quote: feeds.quote, feeds };
    }
  }
}

/** What the api needs for partners' self-service of callbacks: the worker's sending rules, the secrets' box. */
export function partnerCallbacksOf(
  config: Pick<
    ApiConfig,
    | 'NODE_ENV'
    | 'CALLBACK_ALLOW_PRIVATE_NETWORKS'
    | 'CALLBACK_TIMEOUT_MS'
    | 'PAYLOAD_ENCRYPTION_KEY'
    | 'PAYLOAD_ENCRYPTION_PREVIOUS_KEYS'
  >,
): PartnerCallbacks {
  return {
    // A partner setting its own URL never reaches private networks in production, whatever the
    // operators allow for their own demos (CALLBACK_ALLOW_PRIVATE_NETWORKS): that would be read-SSRF.
    sender: {
      ...callbackUrlPolicyOf(config),
      ...(config.NODE_ENV === 'production' && { allowPrivateNetworks: false }),
      timeoutMs: config.CALLBACK_TIMEOUT_MS,
    },
    secrets: createSecretBox(payloadKeysOf(config)),
  };
}
