import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { DataConverter } from '@temporalio/common';
import type { PixWebhookAdmin } from '../adapters/provider/api-pix/api-pix-provider';
import { createPaymentHoldCheck } from '../activities/payment-hold';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';
import { createCallbackActivities } from '../activities/callback.activities';
import { DEFAULT_CALLBACK_SENDER, type CallbackSenderOptions } from '../adapters/callbacks/http-sender';
import { createUsdtLedger } from '../adapters/chain/usdt-ledger';
import { assertSchemaCurrent } from '../adapters/db/migrate';
import { createPool } from '../adapters/db/pool';
import { createSecretBox, type SecretBox } from '../adapters/secrets/secret-box';
import { loadWorkerConfig } from '../config';
import type { SettlementNetwork } from '../domain/payout';
import { activityMetricsInterceptor } from '../observability/activity-metrics';
import { createLogger, type Logger } from '../observability/logger';
import { createMetrics } from '../observability/metrics';
import { registerTreasuryGauges } from '../observability/ops-gauges';
import { scrapeLocal, startOpsServer } from '../observability/ops-server';
import { workerHealthHandler } from '../observability/worker-health';
import { onShutdown } from '../shutdown';
import { connectWorker } from '../temporal/connection';
import { createDataConverter } from '../temporal/data-converter';
import { requireSearchAttributes } from '../temporal/search-attribute-registry';
import { installWorkerRuntime } from '../temporal/worker-runtime';
import {
  setCurrentVersion,
  workerDeploymentOptions,
  type WorkerVersion,
} from '../temporal/worker-versioning';
import { workflowBundleOptions, workflowSource } from '../workflow-bundle';
import { startTracing, type Tracing } from '../observability/tracing';
import { tracingActivityInterceptors, tracingSinks } from '../temporal/tracing';
import {
  callbackSenderOptionsOf,
  pixRailsOf,
  payloadKeysOf,
  screeningOf,
  settlementNetworkOf,
} from './wiring';
import { reportScreeningSources } from '../adapters/screening/receiver-screening';
import { withWorkflowThreads } from '../temporal/workflow-threads';

export interface PayoutWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /** Partner callback sending (URL policy, timeout); https-only, public hosts only when omitted. */
  callbacks?: CallbackSenderOptions;
  /** A bundle built in-process (tests); otherwise dist/'s prebuilt one, or the sources bundled at start. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Opens partners' callback secrets: the payload keys (src/adapters/secrets/secret-box.ts). */
  secrets: SecretBox;
  /** What a COMPLETED payout's callback names of its chain. */
  network: SettlementNetwork;
  /** Must match the clients' (payload encryption, see src/temporal/data-converter.ts). */
  dataConverter?: DataConverter;
  /** Sticky cache size (WORKER_MAX_CACHED_WORKFLOWS); the SDK's heap-based default when omitted. */
  maxCachedWorkflows?: number;
  /** This build's worker deployment version (Worker Versioning, workflows pinned); unversioned when omitted. */
  version?: WorkerVersion;
  /** How long running activities may finish after a shutdown request (WORKER_SHUTDOWN_GRACE_SECONDS). */
  shutdownGraceSeconds?: number;
  /** OpenTelemetry (OTEL_EXPORTER_OTLP_ENDPOINT): spans of workflows and activities; none when omitted. */
  tracing?: Tracing;
  /** The Web UI's workflow stack traces (WORKER_WORKFLOW_STACK_TRACES, D82); off when omitted. */
  workflowStackTraces?: boolean;
}

/** The payout worker: the workflow bundle plus activities wired to the real adapters. */
export function createPayoutWorker(opts: PayoutWorkerOptions): Promise<Worker> {
  const source = opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : workflowSource();
  return withWorkflowThreads(
    {
      stackTraces: opts.workflowStackTraces ?? false,
      warn: (message) => opts.deps.logger.warn({ event: 'workflow_stack_traces_not_off' }, message),
    },
    () =>
      Worker.create({
        connection: opts.connection,
        namespace: opts.namespace,
        taskQueue: opts.taskQueue,
        dataConverter: opts.dataConverter,
        ...(opts.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: opts.maxCachedWorkflows } : {}),
        ...(opts.shutdownGraceSeconds !== undefined
          ? { shutdownGraceTime: `${opts.shutdownGraceSeconds} seconds` }
          : {}),
        ...source,
        ...workerDeploymentOptions(opts.version),
        interceptors: {
          activity: [
            activityMetricsInterceptor(opts.deps.metrics),
            ...tracingActivityInterceptors(opts.tracing),
          ],
          // A prebuilt bundle carries its workflow interceptors; sources bundled at start are given them.
          ...('workflowsPath' in source
            ? { workflowModules: workflowBundleOptions().workflowInterceptorModules }
            : {}),
        },
        sinks: tracingSinks(opts.tracing),
        activities: {
          ...createActivities(opts.deps),
          ...createCallbackActivities({
            db: opts.deps.db,
            logger: opts.deps.logger,
            sender: opts.callbacks ?? DEFAULT_CALLBACK_SENDER,
            secrets: opts.secrets,
            network: opts.network,
          }),
        },
      }),
  );
}

/**
 * The API Pix client certificate's expiry, at start: an expired one makes every call a TLS failure,
 * and institutions issue them for a year or two. An error within 30 days of the end.
 */
function reportClientCertificate(file: string | undefined, logger: Logger): void {
  if (file === undefined) return;
  try {
    const cert = new X509Certificate(readFileSync(file));
    const daysLeft = Math.floor((Date.parse(cert.validTo) - Date.now()) / 86_400_000);
    const fields = { certificate: file, validTo: new Date(cert.validTo).toISOString(), daysLeft };
    if (daysLeft < 30)
      logger.error(fields, 'API Pix client certificate expires soon: renew it at the institution');
    else logger.info(fields, 'API Pix client certificate');
  } catch (err) {
    logger.error(
      { certificate: file, err: err instanceof Error ? err.message : String(err) },
      'API Pix client certificate unreadable',
    );
  }
}

/**
 * Says at start whether the API Pix institution answers (certificate, OAuth client, URL) and where
 * its webhooks go: a wrong secret or an unregistered webhook shows in the first log lines rather
 * than at the first payout. An institution that does not answer does not stop the worker; payouts
 * retry their calls until it does.
 */
async function reportApiPixInstitution(webhooks: PixWebhookAdmin, logger: Logger): Promise<void> {
  try {
    const registered = await webhooks.getWebhook();
    if (registered === null) {
      logger.error('API Pix institution answers, but no webhook is registered: run `admin pix webhook set`');
    } else {
      logger.info({ webhookUrl: registered.url }, 'API Pix institution answers; webhook registered');
    }
  } catch (err) {
    logger.error(
      { err: err instanceof Error ? err.message : String(err) },
      'API Pix institution does not answer',
    );
  }
}

/**
 * The worker process: its configuration, adapters, metrics and Temporal connection, wired here
 * only. src/worker.ts runs it.
 */
export async function main(): Promise<void> {
  const config = loadWorkerConfig();
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'payout-worker' });
  const metrics = createMetrics();
  const db = createPool(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  // Migrations are a separate one-shot job (src/main/migrate.ts); replicas only check for it.
  await assertSchemaCurrent(db);
  const rails = pixRailsOf(config, metrics);
  if (rails.webhooks) {
    reportClientCertificate(config.PIX_API_CERT_FILE, logger);
    void reportApiPixInstitution(rails.webhooks, logger);
  }
  const ledger = createUsdtLedger({
    rpcUrl: config.EVM_RPC_URL,
    chainId: config.EVM_CHAIN_ID,
    usdtAddress: config.USDT_CONTRACT_ADDRESS as `0x${string}`,
    treasuryPrivateKey: config.TREASURY_PRIVATE_KEY as `0x${string}` | undefined,
  });
  // Never a reused verdict before money moves: a wallet listed a second ago is not paid (POST may reuse).
  const screening = screeningOf({ ...config, SCREENING_CACHE_SECONDS: 0 }, db);
  await reportScreeningSources(screening, logger);
  // Before the first connection: SDK logs into pino, and the native worker metrics.
  const runtime = await installWorkerRuntime(logger);
  const connection = await connectWorker(config);
  await requireSearchAttributes(connection.operatorService, config.TEMPORAL_NAMESPACE, logger);
  registerTreasuryGauges(metrics.registry, ledger, logger);
  // Started before the worker exists so /metrics answers during start-up; /readyz says INITIALIZED
  // until the worker polls.
  const started: { worker?: Worker } = {};
  const ops = await startOpsServer({
    host: config.HOST,
    port: config.WORKER_METRICS_PORT,
    registry: metrics.registry,
    extraMetrics: scrapeLocal(runtime.metricsUrl, logger),
    handlers: [workerHealthHandler(() => started.worker?.getState() ?? 'INITIALIZED')],
    logger,
  });
  const version: WorkerVersion | undefined = config.TEMPORAL_WORKER_BUILD_ID
    ? { deploymentName: config.TEMPORAL_WORKER_DEPLOYMENT_NAME, buildId: config.TEMPORAL_WORKER_BUILD_ID }
    : undefined;
  const keys = payloadKeysOf(config);
  const tracing = startTracing({
    serviceName: 'payout-worker',
    ...(config.OTEL_EXPORTER_OTLP_ENDPOINT ? { otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT } : {}),
  });
  const worker = await createPayoutWorker({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    deps: {
      db,
      provider: rails.collection,
      settlementProvider: rails.settlement,
      returns: rails.returns,
      refundPolicy: { autoReturnKinds: config.REFUND_AUTO_RETURN_KINDS },
      ledger,
      logger,
      metrics,
      treasuryRepriceAfterSeconds: config.TREASURY_REPRICE_AFTER_SECONDS,
      // An API Pix institution reports returns the payer's bank obtained (MED): read before signing.
      ...(config.PIX_PROVIDER === 'bcb-api-pix' && {
        paymentHold: createPaymentHoldCheck({ collection: rails.collection, logger }),
      }),
      screening,
    },
    callbacks: callbackSenderOptionsOf(config),
    secrets: createSecretBox(keys),
    network: settlementNetworkOf(config),
    dataConverter: createDataConverter(keys),
    maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS,
    workflowStackTraces: config.WORKER_WORKFLOW_STACK_TRACES,
    shutdownGraceSeconds: config.WORKER_SHUTDOWN_GRACE_SECONDS,
    ...(version ? { version } : {}),
    ...(tracing ? { tracing } : {}),
    ...(config.WORKFLOW_BUNDLE_PATH ? { workflowBundle: { codePath: config.WORKFLOW_BUNDLE_PATH } } : {}),
  });
  started.worker = worker;
  onShutdown(logger, async () => {
    // Stops polling, lets running activities finish (up to the shutdown grace time), then returns.
    worker.shutdown();
  });
  logger.info(
    {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      mode: config.SETTLEMENT_MODE,
      ...(version ? { deployment: version.deploymentName, buildId: version.buildId } : {}),
    },
    'worker started',
  );
  const running = worker.run();
  let promotionFailure: unknown;
  if (version && config.TEMPORAL_WORKER_SET_CURRENT) {
    // The server knows a version only once it has polled, hence after run(); it refuses until then.
    await setCurrentVersion(connection.workflowService, config.TEMPORAL_NAMESPACE, version, {
      waitForPollersMs: 60_000,
    }).then(
      ({ previousBuildId }) =>
        logger.info({ buildId: version.buildId, previousBuildId }, 'worker deployment version is current'),
      (err: unknown) => {
        // A single-worker setup whose build is not current starts no new payouts: stop loudly.
        promotionFailure = err;
        logger.error({ err, buildId: version.buildId }, 'could not make this build the current version');
        worker.shutdown();
      },
    );
  }
  await running;
  if (promotionFailure) throw promotionFailure;
  await ops.close();
  await tracing?.shutdown();
  await connection.close();
  await db.end();
  logger.info('worker stopped');
}
