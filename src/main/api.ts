import { assertSchemaCurrent } from '../adapters/db/migrate';
import { createPool, type Db } from '../adapters/db/pool';
import { buildApp } from '../api/app';
import { loadApiConfig, type ApiConfig } from '../config';
import { createLogger, type Logger } from '../observability/logger';
import { createMetrics, type Metrics } from '../observability/metrics';
import { startOpsServer, type OpsServer } from '../observability/ops-server';
import {
  registerAttentionGauges,
  registerCallbackGauges,
  registerRefundGauges,
} from '../observability/ops-gauges';
import { registerOpenPayoutGauges } from '../observability/payout-gauges';
import { onShutdown } from '../shutdown';
import { createCodecEndpoint } from '../temporal/codec-endpoint';
import { connectClient } from '../temporal/connection';
import { startTracing } from '../observability/tracing';
import { tracingClientInterceptors } from '../temporal/tracing';
import { createDataConverter, createPayloadCodec } from '../temporal/data-converter';
import {
  apiChargeCreatorOf,
  measuredProvider,
  partnerCallbacksOf,
  payloadKeysOf,
  providerEventReaderOf,
  quoteSourceOf,
  runProcess,
  screeningOf,
} from './wiring';
import { reportPriceFeeds } from '../adapters/rates/price-feeds';
import { registerPriceFeedGauges } from '../observability/price-feed-gauges';
import { reportScreeningSources } from '../adapters/screening/receiver-screening';
import { createTreasuryHealthProbe } from '../adapters/chain/treasury-health';

/** The api process: its configuration, adapters, metrics and Temporal client, wired here only. */
async function main(): Promise<void> {
  const config = loadApiConfig();
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'payout-api' });
  const metrics = createMetrics();
  const db = createPool(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  // Metrics and the Web UI's payload codec on their own port, never exposed with the partner API.
  // Started first: a codec endpoint that may not run (production without CODEC_AUTH_TOKEN) stops
  // the process before it touches anything else.
  const ops = await startApiOpsServer(config, { db, metrics, logger });
  // Migrations are a separate one-shot job (src/main/migrate.ts); replicas only check for it.
  await assertSchemaCurrent(db);
  const tracing = startTracing({
    serviceName: 'payout-api',
    ...(config.OTEL_EXPORTER_OTLP_ENDPOINT ? { otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT } : {}),
  });
  const { client: temporal, connection } = await connectClient(
    config,
    createDataConverter(payloadKeysOf(config)),
    tracingClientInterceptors(tracing),
  );
  const provider = measuredProvider(config, metrics);
  const { quote, feeds } = quoteSourceOf(config, provider);
  if (feeds) {
    // A feed address that is no feed stops the api here, as a screening contract without its function does.
    await reportPriceFeeds(feeds, logger);
    registerPriceFeedGauges(metrics.registry, feeds, config.PRICE_FEED_MAX_AGE_SECONDS, logger);
  }
  logger.info({ quoteSource: config.QUOTE_SOURCE }, 'quote source');
  const createCharge = apiChargeCreatorOf(config, metrics);
  const screening = screeningOf(config, db);
  await reportScreeningSources(screening, logger);
  const treasuryHealth =
    config.SETTLEMENT_MODE === 'treasury'
      ? createTreasuryHealthProbe({
          rpcUrl: config.EVM_RPC_URL,
          chainId: config.EVM_CHAIN_ID,
          usdtAddress: config.USDT_CONTRACT_ADDRESS as `0x${string}`,
          treasuryAddress: config.TREASURY_ADDRESS as `0x${string}`,
        })
      : undefined;
  const app = await buildApp({
    config,
    db,
    temporal,
    quote,
    logger,
    metrics,
    screening,
    callbacks: partnerCallbacksOf(config),
    ...(config.PIX_PROVIDER === 'provider-api' && {
      readProviderEvent: providerEventReaderOf(config, metrics),
    }),
    ...(createCharge ? { createCharge } : {}),
    ...(treasuryHealth ? { treasuryHealth } : {}),
    ...(tracing ? { tracing } : {}),
  });
  await app.listen({ host: config.HOST, port: config.PORT });

  onShutdown(logger, async () => {
    // close() stops accepting connections and waits for in-flight requests to finish.
    await app.close();
    await ops.close();
    await tracing?.shutdown();
    await connection.close();
    await db.end();
    logger.info('api stopped');
  });
}

/**
 * The api's ops port (METRICS_PORT): /metrics, with the open-payout gauges that the "stuck"
 * alerts read, and the Temporal Web UI's payload codec endpoint under /codec.
 */
function startApiOpsServer(
  config: ApiConfig,
  deps: { db: Db; metrics: Metrics; logger: Logger },
): Promise<OpsServer> {
  const { logger } = deps;
  registerOpenPayoutGauges(deps.metrics.registry, deps.db, logger);
  registerCallbackGauges(deps.metrics.registry, deps.db, logger);
  registerAttentionGauges(deps.metrics.registry, deps.db, logger);
  registerRefundGauges(deps.metrics.registry, deps.db, logger);
  const codec = createPayloadCodec(payloadKeysOf(config));
  const codecEndpoint = codec
    ? createCodecEndpoint({
        codec,
        authToken: config.CODEC_AUTH_TOKEN,
        ...(config.CODEC_OIDC_JWKS_URL
          ? {
              oidc: {
                jwksUrl: config.CODEC_OIDC_JWKS_URL,
                issuer: config.CODEC_OIDC_ISSUER ?? '',
                ...(config.CODEC_OIDC_AUDIENCE ? { audience: config.CODEC_OIDC_AUDIENCE } : {}),
                allowedUsers: (config.CODEC_OIDC_ALLOWED_USERS ?? '')
                  .split(',')
                  .map((user) => user.trim())
                  .filter(Boolean),
              },
            }
          : {}),
        requireAuthToken: config.NODE_ENV === 'production',
        corsOrigins: config.CODEC_CORS_ORIGINS.split(',').map((origin) => origin.trim()),
        logger,
      })
    : undefined;
  return startOpsServer({
    host: config.HOST,
    port: config.METRICS_PORT,
    registry: deps.metrics.registry,
    handlers: codecEndpoint ? [codecEndpoint] : [],
    logger,
  });
}

runProcess(main);
