import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createPayoutBookkeepingActivities } from '../../src/activities/payout-bookkeeping.activities';
import { createPartner } from '../../src/adapters/db/partners-repo';
import { findPartnerPayout } from '../../src/adapters/db/payouts-repo';
import { createPool, type Db } from '../../src/adapters/db/pool';
import type { PayoutRecord } from '../../src/domain/payout';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { tracingSinks } from '../../src/temporal/tracing';
import { TASK_CLOCK_INTERCEPTORS, workflowBundleOptions } from '../../src/workflow-bundle';
import { getPayoutQuery, payoutWorkflowId, providerEventSignal } from '../../src/workflows/payout.contract';
import { payoutWorkflow } from '../../src/workflows/payout.workflow';
import { PAYOUT_SEARCH_ATTRIBUTES } from '../../src/workflows/search-attributes';
import { testDatabaseUrl } from '../support/env';
import { historyOf, type HistoryEvent } from '../support/history';
import { createDevServerEnv } from '../support/temporal';
import { until } from '../support/until';
import {
  fakeActivities,
  gate,
  isolatedBundle,
  payoutInput,
  pixReceived,
  settlementCompleted,
} from './harness';
import { QUERY_HOLD_MS } from './slow-query.interceptor';

// A partner's GET queries the payout's workflow while a workflow task waits on a local activity (the
// on-chain verification right before COMPLETED). When the activity's answer reaches the SDK while
// the query is being answered, the SDK completes the task with the activity's marker and the query's
// answer and delivers the answer to the workflow only in the next task, which it forces: the run
// decides COMPLETED at that task's start. A replay (what answers a query once the workflow has left
// the worker's cache, or a closed workflow's) resolves the activity from its marker within the
// first task, at the activity's completion time. The read model holds the run's value, the query
// the replay's: the CI symptom of the fault matrix (test/support/payout-invariants.ts), here on
// purpose. Real Temporal dev server, real PostgreSQL read model; the provider and chain are fakes.

/**
 * Short, so that the verification, held, outlives the heartbeat the SDK sends at 80 % of it (the
 * heartbeat's task brings the query); long enough for QUERY_HOLD_MS inside one task.
 */
const WORKFLOW_TASK_TIMEOUT_MS = 4_000;

describe('a query answered while a local activity returns', () => {
  let env: TestWorkflowEnvironment;
  let db: Db;
  let partnerId: string;
  let slowQueries: WorkflowBundleWithSourceMap;

  beforeAll(async () => {
    env = await createDevServerEnv({ server: { searchAttributes: [...PAYOUT_SEARCH_ATTRIBUTES] } });
    db = createPool(testDatabaseUrl(), 3);
    partnerId = (await createPartner(db, 'query during local activity')).partner.id;
    const production = workflowBundleOptions();
    const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
    slowQueries = await bundleWorkflowCode({
      ...production,
      workflowInterceptorModules: [
        ...production.workflowInterceptorModules,
        require.resolve('./no-children.interceptor'),
        require.resolve('./slow-query.interceptor'),
      ],
      logger: quiet,
    });
    await isolatedBundle();
  }, 120_000);
  afterAll(async () => {
    await db?.end();
    await env?.teardown();
  });

  test('every bundle the workers load has the task clock', () => {
    expect(workflowBundleOptions().workflowInterceptorModules).toContain(TASK_CLOCK_INTERCEPTORS);
    expect(QUERY_HOLD_MS).toBeLessThan(WORKFLOW_TASK_TIMEOUT_MS / 2);
  });

  test('the read model and the workflow agree on COMPLETED, updatedAt included', async () => {
    const input = { ...payoutInput(), partnerId };
    const taskQueue = `query-la-${randomUUID().slice(0, 8)}`;
    const bookkeeping = createPayoutBookkeepingActivities({
      db,
      logger: createLogger({ level: 'silent', name: 'test' }),
      metrics: createMetrics(),
    });
    const verifying = gate();
    const verified = gate();
    const fake = fakeActivities({
      // The real read model on the real PostgreSQL: its row is what the test compares.
      recordPayout: (...args) => bookkeeping.recordPayout(...args),
      verifyUsdtTransfer: async () => {
        verifying.open();
        await verified.promise;
        return 'confirmed';
      },
    });
    const worker = await Worker.create({
      sinks: tracingSinks(),
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle: slowQueries,
      activities: fake.activities,
    });
    const handle = await env.client.workflow.start(payoutWorkflow, {
      workflowId: payoutWorkflowId(input.payoutId),
      taskQueue,
      args: [input],
      workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT_MS,
    });

    await worker.runUntil(async () => {
      await handle.signal(providerEventSignal, pixReceived(input.payoutId));
      await until('the settlement requested', () =>
        fake.callsOf('requestSettlement').length > 0 ? true : undefined,
      );
      await handle.signal(providerEventSignal, settlementCompleted(input.payoutId));
      // The task that took the report runs the verification (a local activity), held here: the task
      // is in flight, so the server keeps the query for the next task it hands this worker.
      await verifying.promise;
      const answered = handle.query(getPayoutQuery);
      // At 80 % of the task timeout the SDK completes the task (a heartbeat) and is given the next
      // one, with the query: the worker answers it, QUERY_HOLD_MS late. Meanwhile the verification
      // returns.
      await until(
        'the heartbeat task started',
        async () => (tasksStartedSinceLastSignal(await historyOf(handle)) >= 2 ? true : undefined),
        { intervalMs: 20 },
      );
      verified.open();
      await answered;
      await handle.result();
    });

    // The scenario happened: the verification's marker was recorded by one task, the COMPLETED write
    // it led to was scheduled by a later one.
    const events = await historyOf(handle);
    const marker = events.findIndex((e) => localActivityTypeOf(e) === 'verifyUsdtTransfer');
    const write = lastIndexOf(
      events,
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'recordPayout',
    );
    expect(marker).toBeGreaterThan(-1);
    expect(events.slice(marker, write).some((e) => e.workflowTaskStartedEventAttributes)).toBe(true);

    const {
      workflowId: _w,
      runId: _r,
      ...stored
    } = (await findPartnerPayout(db, partnerId, input.payoutId))!;
    expect(stored.status).toBe('COMPLETED');
    // A worker that never ran this payout answers the query from its history (a replay).
    const replayer = await Worker.create({
      sinks: tracingSinks(),
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle: await isolatedBundle(),
      activities: fake.activities,
    });
    const state = await replayer.runUntil(() => handle.query(getPayoutQuery));
    expect(comparable(stored)).toEqual(comparable(state));
  }, 90_000);
});

/** Workflow tasks started since the last signal (the settlement report): its own, then the heartbeat's. */
function tasksStartedSinceLastSignal(events: HistoryEvent[]): number {
  const last = lastIndexOf(events, (e) => !!e.workflowExecutionSignaledEventAttributes);
  return last === -1 ? 0 : events.slice(last).filter((e) => e.workflowTaskStartedEventAttributes).length;
}

function lastIndexOf(events: HistoryEvent[], match: (e: HistoryEvent) => boolean): number {
  for (let i = events.length - 1; i >= 0; i--) if (match(events[i]!)) return i;
  return -1;
}

function localActivityTypeOf(e: HistoryEvent): string | undefined {
  const data = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
  if (!data) return undefined;
  return (JSON.parse(Buffer.from(data).toString()) as { activity_type?: string }).activity_type;
}

/** Timestamps as epoch milliseconds: PostgreSQL and the workflow format them apart. */
function comparable(p: PayoutRecord): Record<string, unknown> {
  const out: Record<string, unknown> = { ...p };
  for (const field of ['createdAt', 'updatedAt', 'paidAt', 'confirmedAt'] as const) {
    if (p[field] !== undefined) out[field] = Date.parse(p[field]);
  }
  return out;
}
