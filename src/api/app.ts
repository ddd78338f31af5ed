import type { Client } from '@temporalio/client';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { randomUUID } from 'node:crypto';
import type { Db } from '../adapters/db/pool';
import type { ApiConfig } from '../config';
import { parseDecimal } from '../domain/money';
import type { SettlementNetwork } from '../domain/payout';
import type { Logger } from '../observability/logger';
import { ProbesAtDebug } from './probe-logging';
import type { Metrics } from '../observability/metrics';
import { payoutLogContext } from '../observability/request-logging';
import { apiDocs } from './docs/docs.routes';
import { clientErrorHandler, frameworkErrorHandler, installErrorHandling } from './errors';
import { healthRoutes } from './health/health.routes';
import { parseJsonBodies } from './json-body';
import { traceRequests, type Tracing } from '../observability/tracing';
import { trackDeclaredMethods } from './method-not-allowed';
import { payoutListRoutes } from './payouts/list.routes';
import { payoutQrRoutes } from './payouts/qr.routes';
import { payoutCancelRoutes } from './payouts/cancel.routes';
import { payoutRoutes } from './payouts/payout.routes';
import { quoteRoutes } from './quotes/quote.routes';
import type { RateQuote } from './quotes/min-amount';
import { webhookRoutes } from './webhooks/webhook.routes';
import type { ProviderEventReader } from './webhooks/direct-delivery';
import { callbackRoutes, type PartnerCallbacks } from './callbacks/callback.routes';
import { authenticatePartner } from './auth';
import type { ReceiverScreening } from '../domain/screening';
import type { CreatePayoutDeps } from './payouts/create-payout';
import { CHARGE_WAIT_MS } from './payouts/start-payout';

export interface ApiDeps {
  config: ApiConfig;
  db: Db;
  temporal: Client;
  quote: () => Promise<RateQuote>;
  logger: Logger;
  metrics: Metrics;
  /** The receiver's screening at POST (docs/decisions.md D45). */
  screening: ReceiverScreening;
  /** Treasury mode: the treasury's health, read before a payout is created. */
  treasuryHealth?: CreatePayoutDeps['treasuryHealth'];
  /** Partner self-service of callbacks: the worker's sending rules and the box sealing secrets. */
  callbacks: PartnerCallbacks;
  /** OpenTelemetry: a server span per request, parent of what the request starts in Temporal. */
  tracing?: Tracing;
  /**
   * The provider API's events, read back by the api to signal payouts itself (D77). Used only with
   * PIX_PROVIDER=provider-api; without it every webhook goes through a provider-event workflow.
   */
  readProviderEvent?: ProviderEventReader;
  /**
   * Creates a payout's PIX charge from the api before its workflow starts (D81). Used only with
   * PIX_PROVIDER=provider-api; without it POST waits for the workflow's first task to create it.
   */
  createCharge?: CreatePayoutDeps['createCharge'];
}

const BODY_LIMIT_BYTES = 16 * 1024;
// As long as Node's own request-line limit: a long path parameter reaches its route (and its 404)
// instead of Fastify's 414 body.
const MAX_PARAM_LENGTH = 16 * 1024;

/** TRUST_PROXY as Fastify takes it: a hop count, or the addresses/CIDRs of the proxies. */
function trustProxySetting(
  value: string | undefined,
): string | false | ((address: string, hop: number) => boolean) {
  if (value === undefined) return false;
  if (!/^\d+$/.test(value)) return value;
  const hops = Number(value);
  return (_address, hop) => hop < hops;
}

export async function buildApp(deps: ApiDeps): Promise<FastifyInstance> {
  const { config } = deps;
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    logController: new ProbesAtDebug(),
    bodyLimit: BODY_LIMIT_BYTES,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    // Per-address throttles (API-key failures, new webhook tokens) key on request.ip: behind a load
    // balancer that must be the client's address, not the balancer's.
    trustProxy: trustProxySetting(config.TRUST_PROXY),
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandling(app, trackDeclaredMethods(app));
  // Every body this api takes is JSON; without this, text/plain would parse into a string and get a
  // schema message instead of 415.
  app.removeContentTypeParser('text/plain');
  parseJsonBodies(app);
  if (deps.tracing) traceRequests(app, deps.tracing.tracer);

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // No answer is ever to be read as another type than it declares (a payout echoed as HTML).
    reply.header('x-content-type-options', 'nosniff');
    // Partner answers carry PIX keys, wallets and amounts (personal data): no cache on the way, and
    // no browser, may keep them. A route with its own rule (the QR image's no-cache) keeps it.
    // By the matched route, not the raw URL: `/%761/payouts/x` reaches the same route.
    if (request.routeOptions.url?.startsWith('/v1/') && !reply.hasHeader('cache-control'))
      reply.header('cache-control', 'no-store');
  });
  app.addHook('onResponse', async (request, reply) => {
    deps.metrics.httpRequestDuration.observe(
      {
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status_code: String(reply.statusCode),
      },
      reply.elapsedTime / 1000,
    );
  });

  const network: SettlementNetwork = {
    name: config.SETTLEMENT_NETWORK_NAME,
    chainId: config.EVM_CHAIN_ID,
    explorerUrl: config.BLOCK_EXPLORER_URL,
  };
  // One API-key check for every partner route: one failure bucket per client address, whatever the route.
  const authenticate = authenticatePartner(deps.db, {
    failuresPerMinute: config.AUTH_FAILURE_LIMIT_PER_MINUTE,
  });
  await app.register(apiDocs, { publicBaseUrl: config.PUBLIC_BASE_URL, network });
  await app.register(payoutLogContext);
  await app.register(healthRoutes, { db: deps.db, temporal: deps.temporal });
  await app.register(payoutRoutes, {
    network,
    db: deps.db,
    temporal: deps.temporal,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    quote: deps.quote,
    minAmountBuffer: config.MIN_AMOUNT_BUFFER,
    maxAmountCentavos: parseDecimal(config.MAX_AMOUNT_BRL, 2),
    postRateLimitPerMinute: config.POST_RATE_LIMIT_PER_MINUTE,
    readRateLimitPerMinute: config.READ_RATE_LIMIT_PER_MINUTE,
    authenticate,
    chargeWaitMs: CHARGE_WAIT_MS,
    screening: deps.screening,
    ...(deps.createCharge ? { createCharge: deps.createCharge } : {}),
    chargePaths: { counted: (path) => deps.metrics.payoutChargePaths.inc({ path }) },
    ...(deps.treasuryHealth ? { treasuryHealth: deps.treasuryHealth } : {}),
    screeningCounters: {
      refused: (source) => deps.metrics.screeningRefusals.inc({ source }),
      unavailable: () => deps.metrics.screeningUnavailable.inc(),
    },
    aboveQuoteTolerance: config.SETTLEMENT_ABOVE_QUOTE_TOLERANCE,
    settings: {
      chargeExpirySeconds: config.PIX_CHARGE_EXPIRY_SECONDS,
      settlementTimeoutSeconds: config.SETTLEMENT_TIMEOUT_SECONDS,
      settlementMode: config.SETTLEMENT_MODE,
      settlementConfirmations: config.SETTLEMENT_CONFIRMATIONS,
      chainId: config.EVM_CHAIN_ID,
    },
  });
  await app.register(payoutCancelRoutes, {
    network,
    db: deps.db,
    temporal: deps.temporal,
    postRateLimitPerMinute: config.POST_RATE_LIMIT_PER_MINUTE,
    authenticate,
  });
  await app.register(payoutListRoutes, {
    network,
    db: deps.db,
    readRateLimitPerMinute: config.READ_RATE_LIMIT_PER_MINUTE,
    authenticate,
  });
  await app.register(payoutQrRoutes, {
    db: deps.db,
    temporal: deps.temporal,
    readRateLimitPerMinute: config.READ_RATE_LIMIT_PER_MINUTE,
    authenticate,
  });
  await app.register(quoteRoutes, {
    quote: deps.quote,
    minAmountBuffer: config.MIN_AMOUNT_BUFFER,
    maxAmountCentavos: parseDecimal(config.MAX_AMOUNT_BRL, 2),
    readRateLimitPerMinute: config.READ_RATE_LIMIT_PER_MINUTE,
    authenticate,
  });
  await app.register(callbackRoutes, {
    ...deps.callbacks,
    db: deps.db,
    rateLimitPerMinute: config.CALLBACK_RATE_LIMIT_PER_MINUTE,
    authenticate,
  });
  await app.register(webhookRoutes, {
    db: deps.db,
    temporal: deps.temporal,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    providerName: config.PROVIDER_NAME,
    pixProvider: config.PIX_PROVIDER,
    newTokensPerMinute: config.WEBHOOK_RATE_LIMIT_PER_MINUTE,
    metrics: deps.metrics,
    ...(deps.readProviderEvent &&
      config.PIX_PROVIDER === 'provider-api' && { readEvent: deps.readProviderEvent }),
  });
  return app;
}
