import { assertSchemaCurrent } from '../adapters/db/migrate';
import { createPool } from '../adapters/db/pool';
import { createConfiguredProvider } from '../adapters/provider/from-config';
import { createCachedQuote } from '../adapters/provider/quote-cache';
import { loadConfig } from '../config';
import { createLogger } from '../observability/logger';
import { createMetrics } from '../observability/metrics';
import { startApiOpsServer } from '../observability/api-ops';
import { onShutdown } from '../shutdown';
import { connectClient } from '../temporal/connection';
import { buildApp } from './app';
import {
  createChainAndDenylistScreening,
  reportScreeningSources,
} from '../adapters/screening/receiver-screening';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'payout-api' });
  const metrics = createMetrics();
  const db = createPool(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  // Metrics and the Web UI's payload codec on their own port, never exposed with the partner API.
  // Started first: a codec endpoint that may not run (production without CODEC_AUTH_TOKEN) stops
  // the process before it touches anything else.
  const ops = await startApiOpsServer(config, { db, metrics, logger });
  // Migrations are a separate one-shot job (src/cli/migrate.ts); replicas only check for it.
  await assertSchemaCurrent(db);
  const { client: temporal, connection } = await connectClient(config);
  const provider = createConfiguredProvider(config, metrics);
  const quote = createCachedQuote(provider, { ttlMs: config.QUOTE_CACHE_SECONDS * 1000 });
  const screening = createChainAndDenylistScreening({
    rpcUrl: config.EVM_RPC_URL,
    db,
    sources: config.SCREENING_SOURCES,
    tokenAddress: config.USDT_CONTRACT_ADDRESS,
    oracleAddress: config.SANCTIONS_ORACLE_ADDRESS,
    cacheSeconds: config.SCREENING_CACHE_SECONDS,
  });
  await reportScreeningSources(screening, logger);
  const app = await buildApp({ config, db, temporal, quote, logger, metrics, screening });
  await app.listen({ host: config.HOST, port: config.PORT });

  onShutdown(logger, async () => {
    // close() stops accepting connections and waits for in-flight requests to finish.
    await app.close();
    await ops.close();
    await connection.close();
    await db.end();
    logger.info('api stopped');
  });
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
