import {
  apiChargeCreatorOf,
  partnerCallbacksOf,
  providerEventReaderOf,
  quoteSourceOf,
  screeningOf,
} from '../../src/main/wiring';
import { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { createPool } from '../../src/adapters/db/pool';
import { createHttpProvider } from '../../src/adapters/provider/http-provider';
import { buildApp, type ApiDeps } from '../../src/api/app';
import { loadApiConfig, type ApiConfig } from '../../src/config';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';

export interface RunningApi {
  url: string;
  app: FastifyInstance;
  close(): Promise<void>;
}

/** A quote that never expires and needs no provider, for an api whose test is not about quotes. */
export const FIXED_QUOTE: ApiDeps['quote'] = async () => ({
  rate: '5.50',
  expiresAt: new Date(Date.now() + 30_000).toISOString(),
});

/** Receiver screening on the sources `config` names, as the api and the worker processes build it. */
export const configuredScreening = screeningOf;

/** The config's QUOTE_SOURCE as the api process quotes (the provider's quote from `providerUrl`). */
function configuredQuote(config: ApiConfig, providerUrl: string): ApiDeps['quote'] {
  return quoteSourceOf(config, createHttpProvider({ baseUrl: providerUrl, timeoutMs: 2_000 })).quote;
}

/**
 * The api in this process on a loopback port (a free one unless `port` is given). Anything not given is what a test that does not
 * look at it needs: quotes from `config.PROVIDER_API_URL` (or FIXED_QUOTE when `providerUrl` is
 * null), webhook events read back from the same provider, a pool and a Temporal client that connect only when used, a silent logger, fresh metrics,
 * screening by the config's sources.
 */
export async function startApi(
  deps: Partial<ApiDeps> & { config?: ApiConfig; providerUrl?: string | null; port?: number } = {},
): Promise<RunningApi> {
  const config = deps.config ?? loadApiConfig({ LOG_LEVEL: 'silent' });
  const providerUrl = deps.providerUrl === undefined ? config.PROVIDER_API_URL : deps.providerUrl;
  const ownDb = deps.db === undefined ? createPool(config.DATABASE_URL, 1) : undefined;
  const db = deps.db ?? ownDb!;
  const metrics = deps.metrics ?? createMetrics();
  // Webhooks as the api process takes them: read back from the provider and signalled (D77).
  const readProviderEvent =
    deps.readProviderEvent ??
    (providerUrl !== null && config.PIX_PROVIDER === 'provider-api'
      ? providerEventReaderOf({ ...config, PROVIDER_API_URL: providerUrl }, metrics)
      : undefined);
  // PIX charges as the api process creates them (D81), from the same provider.
  const createCharge =
    deps.createCharge ??
    (providerUrl !== null
      ? apiChargeCreatorOf({ ...config, PROVIDER_API_URL: providerUrl }, metrics)
      : undefined);
  const app = await buildApp({
    config,
    db,
    // The config's own sources, as the api process screens (a test without a chain sets SCREENING_SOURCES).
    screening: deps.screening ?? configuredScreening(config, db),
    temporal: deps.temporal ?? new Client(),
    quote: deps.quote ?? (providerUrl === null ? FIXED_QUOTE : configuredQuote(config, providerUrl)),
    callbacks: deps.callbacks ?? partnerCallbacksOf(config),
    logger: deps.logger ?? createLogger({ level: 'silent', name: 'test' }),
    metrics,
    ...(readProviderEvent ? { readProviderEvent } : {}),
    ...(createCharge ? { createCharge } : {}),
    ...(deps.treasuryHealth ? { treasuryHealth: deps.treasuryHealth } : {}),
    ...(deps.tracing ? { tracing: deps.tracing } : {}),
  });
  try {
    const url = await app.listen({ host: '127.0.0.1', port: deps.port ?? 0 });
    return {
      url,
      app,
      close: async () => {
        await app.close();
        await ownDb?.end();
      },
    };
  } catch (err) {
    await app.close();
    await ownDb?.end();
    throw err;
  }
}
