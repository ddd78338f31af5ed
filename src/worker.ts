import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from './activities';
import { createUsdtLedger } from './adapters/chain/usdt-ledger';
import { runMigrations } from './adapters/db/migrate';
import { createPool } from './adapters/db/pool';
import { createHttpProvider } from './adapters/provider/http-provider';
import { loadConfig } from './config';
import { createLogger } from './observability/logger';
import { createMetrics } from './observability/metrics';
import { connectWorker } from './temporal/connection';
import { onShutdown } from './shutdown';

export interface PayoutWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /** A prebuilt bundle (tests build one per run); otherwise the workflows are bundled at start. */
  workflowBundle?: WorkerOptions['workflowBundle'];
}

/** The payout worker: the workflow bundle plus activities wired to the real adapters. */
export function createPayoutWorker(opts: PayoutWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : { workflowsPath: require.resolve('./workflows') }),
    activities: createActivities(opts.deps),
  });
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'payout-worker' });
  const metrics = createMetrics();
  const db = createPool(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  await runMigrations(config.DATABASE_URL);
  const provider = createHttpProvider({
    baseUrl: config.PROVIDER_API_URL,
    apiKey: config.PROVIDER_API_KEY,
    timeoutMs: config.PROVIDER_TIMEOUT_MS,
    onCall: (m) => metrics.providerCallDuration.observe({ operation: m.operation, outcome: m.outcome }, m.durationMs / 1000),
  });
  const ledger = createUsdtLedger({
    rpcUrl: config.EVM_RPC_URL,
    chainId: config.EVM_CHAIN_ID,
    usdtAddress: config.USDT_CONTRACT_ADDRESS as `0x${string}`,
    treasuryPrivateKey: config.TREASURY_PRIVATE_KEY as `0x${string}` | undefined,
  });
  const connection = await connectWorker(config);
  const worker = await createPayoutWorker({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    deps: { db, provider, ledger, logger, metrics },
  });
  onShutdown(logger, async () => {
    // Stops polling, lets running activities finish (up to the shutdown grace time), then returns.
    worker.shutdown();
  });
  logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE, mode: config.SETTLEMENT_MODE }, 'worker started');
  await worker.run();
  await connection.close();
  await db.end();
  logger.info('worker stopped');
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
