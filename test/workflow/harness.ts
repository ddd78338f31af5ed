import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { PayoutActivities } from '../../src/activities';
import type { PayoutRecord } from '../../src/domain/payout';
import { cachedWorkflowBundle } from '../support/bundle-cache';
import { createTimeSkippingEnv } from '../support/temporal';
import { until } from '../support/until';
import type { ProviderEvent } from '../../src/domain/provider-event';
import {
  getPayoutQuery,
  payoutWorkflowId,
  type PayoutWorkflowInput,
} from '../../src/workflows/payout.contract';
import { workflowBundleOptions } from '../../src/workflow-bundle';
import { payoutWorkflow } from '../../src/workflows/payout.workflow';
import { withWorkflowThreads } from '../../src/temporal/workflow-threads';
import { tracingSinks } from '../../src/temporal/tracing';

/**
 * Workflow unit tests run the real workflow code on Temporal's time-skipping test server; only the
 * activities are stand-ins (as in Temporal's testing guide), so each test decides what the outside
 * world answers and sees exactly which calls the workflow made.
 */

export const TX_HASH = `0x${'ab'.repeat(32)}` as const;
export const TREASURY_TX_HASH = `0x${'cd'.repeat(32)}` as const;
export const CHARGE_ID = 'chg_0123456789abcdef012345';
export const SETTLEMENT_ID = 'stl_0123456789abcdef012345';

// The payout fixtures every test shares, here too for the workflow tests' one import.
export { payoutInput, SETTINGS } from '../support/payouts';

let seq = 0;
const eventId = () => `evt_${(++seq).toString().padStart(6, '0')}_${randomUUID().slice(0, 8)}`;
const at = () => new Date().toISOString();

export function pixReceived(payoutId: string, over: Partial<ProviderEvent> = {}): ProviderEvent {
  return {
    type: 'pix.received',
    eventId: eventId(),
    chargeId: CHARGE_ID,
    externalId: payoutId,
    occurredAt: at(),
    paidAt: '2026-11-21T22:00:00.000Z',
    amountBrl: '100.00',
    ...over,
  } as ProviderEvent;
}

export function settlementCompleted(payoutId: string, over: Partial<ProviderEvent> = {}): ProviderEvent {
  return {
    type: 'settlement.completed',
    eventId: eventId(),
    chargeId: CHARGE_ID,
    externalId: payoutId,
    occurredAt: at(),
    txHash: TX_HASH,
    amountUsdt: '17.825311',
    chainId: 42161,
    confirmedAt: '2026-11-21T22:00:05.000Z',
    ...over,
  } as ProviderEvent;
}

export function settlementFailed(payoutId: string, over: Partial<ProviderEvent> = {}): ProviderEvent {
  return {
    type: 'settlement.failed',
    eventId: eventId(),
    chargeId: CHARGE_ID,
    externalId: payoutId,
    occurredAt: at(),
    failureReason: 'simulated settlement failure',
    ...over,
  } as ProviderEvent;
}

export interface Call {
  name: string;
  args: unknown[];
}

type Fakes = { [K in keyof PayoutActivities]: (...args: Parameters<PayoutActivities[K]>) => unknown };

/**
 * Stand-in activities with sensible defaults (the happy path), each overridable, and a log of every
 * call the workflow made.
 */
export function fakeActivities(overrides: Partial<Fakes> = {}) {
  const calls: Call[] = [];
  const defaults: Fakes = {
    recordPayout: async () => {},
    findPayoutWorkflow: async () => null,
    createPixCharge: async () => ({ chargeId: CHARGE_ID, pixCopyPaste: '000201...6304ABCD' }),
    requestSettlement: async () => ({ settlementId: SETTLEMENT_ID, status: 'pending' as const }),
    // The provider has the settlement and has not sent anything yet.
    fetchSettlementStatus: async () => ({ status: 'pending' as const, chainId: 42161 }),
    raiseAttention: async () => {},
    clearAttention: async () => {},
    recordOperatorDecision: async () => {},
    screenReceiver: async () => ({ kind: 'clear' as const }),
    hasOpenTreasuryTransfer: async () => false,
    closeTreasuryRounds: async () => 'closed' as const,
    fetchProviderEvent: async () => null,
    verifyUsdtTransfer: async () => 'confirmed',
    sendTreasuryTransfer: async () => ({ txHash: TREASURY_TX_HASH }),
    confirmTreasuryTransfer: async () => ({ status: 'confirmed' as const, txHash: TREASURY_TX_HASH }),
    alertSettlementOverdue: async () => {},
    alertLateSettlement: async () => {},
    alertSettlementBelowMinimum: async () => {},
    recordLatePayment: async () => ({ outcome: 'opened' as const, caseId: randomUUID() }),
    // The refund workflow's: a case returned at once (the refund tests override them).
    beginRefund: async () => 'return' as const,
    approveRefund: async () => 'returning' as const,
    requestReturn: async () => 'returning' as const,
    checkReturn: async () => 'returned' as const,
    refundCaseStatus: async () => 'returned' as const,
    cancelPixCharge: async () => ({ kind: 'removed' as const, removedAt: '2026-11-21T22:30:00.000Z' }),
    fetchChargeStatus: async () => ({
      status: 'expired' as const,
      expiresAt: '2026-11-21T23:00:00.000Z',
      payments: [],
    }),
  };
  // The payout workflow starts a partner-callback child when it ends; the stand-in partner has no
  // callback URL, so the child finishes at once instead of retrying in the background (a pending
  // activity would stop the test server from skipping time for the next test).
  const callbacks = {
    sendPartnerCallback: async () => ({ kind: 'not_configured' as const }),
    givePartnerCallbackUp: async () => {},
  };
  const impl = { ...callbacks, ...defaults, ...overrides } as Record<string, (...args: unknown[]) => unknown>;
  const activities = Object.fromEntries(
    Object.entries(impl).map(([name, fn]) => [
      name,
      async (...args: unknown[]) => {
        calls.push({ name, args });
        return fn(...args);
      },
    ]),
  );
  return {
    activities,
    calls,
    /** Arguments of every call to `name`, in order. */
    callsOf: (name: keyof PayoutActivities) => calls.filter((c) => c.name === name).map((c) => c.args),
    /**
     * The same, once per distinct argument list. A step run as a local activity may run again, with
     * the same arguments, when its workflow task is redone (on this test server, a query arriving
     * while the task runs can cause that); the provider and the chain answer a repeated identical
     * call as the first, so a repeat is not a second request.
     */
    distinctCallsOf: (name: keyof PayoutActivities) =>
      calls
        .filter((c) => c.name === name)
        .map((c) => c.args)
        .filter((args, i, all) => all.findIndex((a) => JSON.stringify(a) === JSON.stringify(args)) === i),
    /**
     * The status of each version the read model was given, in order. A local activity (the interim
     * writes) may run again with the same version, when its workflow task is redone; the read model
     * ignores a version it already has, so a repeat is no second write.
     */
    savedStatuses: () => {
      const saved = calls.filter((c) => c.name === 'recordPayout').map((c) => c.args[0] as PayoutRecord);
      return saved
        .filter((p, i) => saved.findIndex((q) => q.version === p.version) === i)
        .map((p) => p.status);
    },
  };
}

export const notYet = () => ApplicationFailure.retryable('not yet', 'NotYetConfirmed');
/** A treasury round refused because the token's issuer blocked the treasury: the payout waits. */
export const treasuryBlocked = () =>
  ApplicationFailure.retryable('treasury cannot send (blocked_by_issuer)', 'TreasuryCannotSend');
/** The provider's status naming TX_HASH as the settlement's completed transfer. */
export const statusNamingTx = async () => ({
  status: 'completed' as const,
  chainId: 42161,
  txHash: TX_HASH,
  amountUsdt: '17.825311',
});

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;
let isolated: Promise<WorkflowBundleWithSourceMap> | undefined;

/** The workflows exactly as the worker bundles them (replay, recording). */
export function testBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= cachedWorkflowBundle(workflowBundleOptions());
  return bundle;
}

/** The same, minus child workflows (see no-children.interceptor.ts): for the unit tests. */
export function isolatedBundle(): Promise<WorkflowBundleWithSourceMap> {
  const production = workflowBundleOptions();
  isolated ??= cachedWorkflowBundle({
    ...production,
    workflowInterceptorModules: [
      ...(production.workflowInterceptorModules ?? []),
      require.resolve('./no-children.interceptor'),
    ],
  });
  return isolated;
}

/**
 * The file's time-skipping test server: started before its first test (with `warmUp` done too: the
 * workflow bundle its workers load), torn down after its last. What it returns stands for the
 * server once started.
 */
export function useTimeSkippingEnv(warmUp: () => Promise<unknown> = isolatedBundle): TestWorkflowEnvironment {
  let env: TestWorkflowEnvironment | undefined;
  beforeAll(async () => {
    env = await createTimeSkippingEnv();
    await warmUp();
  }, 60_000);
  afterAll(() => env?.teardown());
  return new Proxy({} as TestWorkflowEnvironment, {
    get(_target, key) {
      if (!env) throw new Error(`the test server is used before it started (${String(key)})`);
      const value: unknown = Reflect.get(env, key);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(env) : value;
    },
  });
}

export type PayoutHandle = Awaited<ReturnType<TestWorkflowEnvironment['client']['workflow']['start']>>;
const startedOn = new Map<string, PayoutHandle[]>();

/**
 * Starts a payout workflow on `taskQueue` (a withWorker queue); withWorker ends it if the test left
 * it running.
 */
export async function startPayout(
  env: TestWorkflowEnvironment,
  taskQueue: string,
  input: PayoutWorkflowInput,
): Promise<PayoutHandle> {
  const handle = await env.client.workflow.start(payoutWorkflow, {
    workflowId: payoutWorkflowId(input.payoutId),
    taskQueue,
    args: [input],
  });
  startedOn.get(taskQueue)?.push(handle);
  return handle;
}

/** A worker on `taskQueue` serving the workflows without children (isolatedBundle) and `activities`. */
export async function isolatedWorker(
  env: TestWorkflowEnvironment,
  taskQueue: string,
  activities: object,
): Promise<Worker> {
  return Worker.create({
    // The bundle's tracing interceptors export through this sink (off here: it drops them).
    sinks: tracingSinks(),
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    workflowBundle: await isolatedBundle(),
    activities,
  });
}

/** Runs `fn` with a worker on a fresh task queue, serving the real workflows and `activities`. */
export async function withWorker<T>(
  env: TestWorkflowEnvironment,
  activities: object,
  fn: (taskQueue: string) => Promise<T>,
  opts: { children?: boolean; stackTraces?: boolean } = {},
): Promise<T> {
  const taskQueue = `wf-test-${randomUUID().slice(0, 8)}`;
  const workflowBundle = await (opts.children ? testBundle() : isolatedBundle());
  // Workflow stack traces as the service's worker has them unless asked (off, D82).
  const worker = await withWorkflowThreads({ stackTraces: opts.stackTraces ?? false }, () =>
    Worker.create({
      // The bundle's tracing interceptors export through this sink (off here: it drops them).
      sinks: tracingSinks(),
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle,
      activities,
    }),
  );
  startedOn.set(taskQueue, []);
  return worker.runUntil(async () => {
    try {
      return await fn(taskQueue);
    } finally {
      await terminateLeftRunning(startedOn.get(taskQueue) ?? []);
      startedOn.delete(taskQueue);
    }
  });
}

/** Starts a payout of `input` on a worker with `fake`'s activities and hands its handle to `fn`. */
export function runPayout<T>(
  env: TestWorkflowEnvironment,
  fake: { activities: object },
  input: PayoutWorkflowInput,
  fn: (handle: PayoutHandle) => Promise<T>,
): Promise<T> {
  return withWorker(env, fake.activities, async (taskQueue) => fn(await startPayout(env, taskQueue, input)));
}

/**
 * Ends the payouts a test left running, while their worker still polls. Left alone, a payout whose
 * worker is gone holds the time-skipping test server's clock for every later test: when a query
 * arrives while a workflow task runs (local activities keep one open), the server schedules another
 * workflow task to answer it; with no worker, that task times out and is rescheduled forever, and
 * the server does not skip time while a workflow task is outstanding.
 */
async function terminateLeftRunning(handles: PayoutHandle[]): Promise<void> {
  for (const handle of handles) {
    const { status } = await handle.describe();
    if (status.name === 'RUNNING') await handle.terminate('test over');
  }
}

/**
 * Cleans up after a payout run with real children (recording only): its partner callback is ABANDON
 * and outlives the payout by design. The Java time-skipping test server keeps a time-skipping lock
 * for such a child until the parent records the child's end, which never happens once the parent
 * has closed (same family as temporalio/sdk-java#1138); one unlock per such child puts the count
 * back, and the child is terminated so nothing keeps running on a task queue whose worker is gone.
 */
export async function endChildren(env: TestWorkflowEnvironment, workflowId: string): Promise<void> {
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const closedInParent = new Set(
    events.flatMap((e) => {
      const closed =
        e.childWorkflowExecutionCompletedEventAttributes ??
        e.childWorkflowExecutionFailedEventAttributes ??
        e.childWorkflowExecutionTerminatedEventAttributes ??
        e.childWorkflowExecutionCanceledEventAttributes ??
        e.childWorkflowExecutionTimedOutEventAttributes;
      return closed?.workflowExecution?.workflowId ? [closed.workflowExecution.workflowId] : [];
    }),
  );
  for (const event of events) {
    const childId = event.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
    if (!childId) continue;
    await env.client.workflow
      .getHandle(childId)
      .terminate('test over')
      .catch(() => {});
    if (!closedInParent.has(childId)) await env.connection.testService?.unlockTimeSkipping({});
  }
}

/** Polls the workflow's query until `predicate` holds (real time: no time skipping meanwhile). */
export function waitForPayout(
  handle: { query: (q: typeof getPayoutQuery) => Promise<PayoutRecord> },
  predicate: (p: PayoutRecord) => boolean,
  timeoutMs = 10_000,
): Promise<PayoutRecord> {
  let last: PayoutRecord | undefined;
  return until(
    () => `the payout to match; last: ${JSON.stringify(last)}`,
    async () => {
      // A query can fail while a workflow task runs on this server: it is asked again.
      last = await handle.query(getPayoutQuery).catch(() => undefined);
      return last && predicate(last) ? last : undefined;
    },
    { timeoutMs, intervalMs: 25 },
  );
}

/** A promise with its resolve function, for gating a fake activity until the test says so. */
export function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

/**
 * Lets workflow time pass a step at a time until `done()` holds (at most `max` steps). The test server
 * skips time only while a client waits on it, and what a timer starts (a retry, an alert) then runs in
 * real time: stepping, rather than one long sleep and a look, keeps the check true under load.
 */
export async function skipUntil(
  env: TestWorkflowEnvironment,
  done: () => boolean,
  step = '1 minute',
  max = 180,
): Promise<void> {
  for (let i = 0; i < max && !done(); i++) {
    await env.sleep(step);
    // What the step started runs in real time: on a loaded machine the worker may not have taken it
    // yet, and 180 skipped minutes can pass in a few real seconds. A little real time per step lets it.
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  if (!done()) throw new Error(`still not done after ${max} steps of ${step}`);
}
