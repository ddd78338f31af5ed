import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createPool } from '../../src/adapters/db/pool';
import { createPayoutBookkeepingActivities } from '../../src/activities/payout-bookkeeping.activities';
import type { PayoutRecord } from '../../src/domain/payout';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { tracingSinks } from '../../src/temporal/tracing';

/**
 * Worker #1 of test/workflow/redone-task.test.ts, in a process of its own so the test can SIGKILL it
 * in the middle of a workflow task, as a crashed pod dies: no shutdown, no task completion, no
 * goodbye to the server. Run with `node --import tsx`, configured by KILLED_WORKER (JSON).
 *
 * The read model writes are the real activity on the real PostgreSQL; the provider is a stand-in
 * whose charge is `chargeId`. Each write is reported to the parent over IPC once it is in the
 * database; the write that matches `blockAfter` is the side effect the test is about: the fake then
 * never returns, so the workflow task that decided it can never complete here.
 */
interface Config {
  address: string;
  namespace: string;
  taskQueue: string;
  bundlePath: string;
  databaseUrl: string;
  chargeId: string;
  pixCopyPaste: string;
  /** The status of the write after which this worker hangs (PENDING means PENDING with its pay code). */
  blockAfter: 'PENDING' | 'PROCESSING';
  /**
   * The charge is created only once the parent sends `release`: the SDK meanwhile completes the first
   * workflow task (it does so at 80 % of the task timeout while a local activity runs), so the side
   * effect lands in a later task, whose redo replays the first from history.
   */
  holdCharge?: boolean;
}

export type KilledWorkerMessage =
  | { kind: 'ready' }
  | { kind: 'recordPayout'; record: PayoutRecord; blocked: boolean }
  | { kind: 'createPixCharge' };

function report(message: KilledWorkerMessage): void {
  process.send?.(message);
}

async function main(): Promise<void> {
  const cfg = JSON.parse(process.env.KILLED_WORKER ?? '') as Config;
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const db = createPool(cfg.databaseUrl, 2);
  const real = createPayoutBookkeepingActivities({
    db,
    logger: createLogger({ level: 'silent', name: 'killed-worker' }),
    metrics: createMetrics(),
  });
  const released = new Promise<void>((resolve) =>
    process.on('message', (m) => {
      if (m === 'release') resolve();
    }),
  );
  const hang = () => new Promise<never>(() => {});
  const activities = {
    async recordPayout(record: PayoutRecord, workflowId: string, runId: string) {
      await real.recordPayout(record, workflowId, runId);
      const blocked =
        record.status === cfg.blockAfter && (record.status !== 'PENDING' || record.pixCopyPaste !== '');
      report({ kind: 'recordPayout', record, blocked });
      if (blocked) await hang();
    },
    async createPixCharge() {
      report({ kind: 'createPixCharge' });
      if (cfg.holdCharge) await released;
      return {
        chargeId: cfg.chargeId,
        pixCopyPaste: cfg.pixCopyPaste,
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      };
    },
  };
  const connection = await NativeConnection.connect({ address: cfg.address });
  const worker = await Worker.create({
    // The bundle's tracing interceptors export through this sink (off here: it drops them).
    sinks: tracingSinks(),
    connection,
    namespace: cfg.namespace,
    taskQueue: cfg.taskQueue,
    workflowBundle: { codePath: cfg.bundlePath },
    activities,
    // Should a task of this worker have completed, its sticky queue gives the workflow back to the
    // shared queue 1 s after this worker is gone, not after the default 10 s.
    stickyQueueScheduleToStartTimeout: '1s',
  });
  report({ kind: 'ready' });
  await worker.run();
}

main().catch((err: unknown) => {
  process.stderr.write(`killed-worker: ${String(err)}\n`);
  process.exit(1);
});
