import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createPartner } from '../../src/adapters/db/partners-repo';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { openRefundCase } from '../../src/adapters/db/refund-cases-repo';
import { createPayoutBookkeepingActivities } from '../../src/activities/payout-bookkeeping.activities';
import type { PayoutRecord } from '../../src/domain/payout';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { payoutWorkflowId, providerEventSignal } from '../../src/workflows/payout.contract';
import { payoutWorkflow } from '../../src/workflows/payout.workflow';
import { testDatabaseUrl } from '../support/env';
import { createTimeSkippingEnv } from '../support/temporal';
import {
  CHARGE_ID,
  fakeActivities,
  gate,
  isolatedBundle,
  isolatedWorker,
  payoutInput,
  pixReceived,
  settlementCompleted,
} from './harness';
import type { KilledWorkerMessage } from './killed-worker';
import type { WorkflowHandle } from '@temporalio/client';
import { historyOf } from '../support/history';
import { until } from '../support/until';

// A local activity acts before the workflow task that decided it is recorded. Here the worker dies
// (SIGKILL, in a process of its own) right after such a side effect, the task times out and is
// redone on another worker that gets a different answer from the provider, so the redone task
// decides otherwise. The read model and the refund cases are the real activities on the real
// PostgreSQL in both workers; only the provider is a stand-in. docs/decisions.md has the rule.

const ROOT = path.resolve(__dirname, '../..');
/**
 * Short, so the dead worker's task is redone soon. Not shorter: the SDK completes a task whose local
 * activities still run at 80 % of this (recording the ones done), and worker #1's whole first task
 * (a fresh workflow sandbox, three local activities, the database) must fit before that, or there is
 * nothing left to redo (the tests then fail: worker #2 would not be asked for the charge).
 */
const WORKFLOW_TASK_TIMEOUT = '3s';
const RETRY_CHARGE_ID = 'chg_retry0000000000000000000';

describe('a workflow task redone after its worker died past a local side effect', () => {
  let env: TestWorkflowEnvironment;
  let db: Db;
  let tmp: string;
  let bundlePath: string;
  let partnerId: string;
  const real = () =>
    createPayoutBookkeepingActivities({
      db,
      logger: createLogger({ level: 'silent', name: 'test' }),
      metrics: createMetrics(),
    });

  beforeAll(async () => {
    env = await createTimeSkippingEnv();
    db = createPool(testDatabaseUrl(), 3);
    tmp = await mkdtemp(path.join(os.tmpdir(), 'redone-task-'));
    // Worker #1 runs the very bundle worker #2 runs, from a file.
    bundlePath = path.join(tmp, 'workflow-bundle.js');
    await writeFile(bundlePath, (await isolatedBundle()).code);
    partnerId = (await createPartner(db, 'redone task')).partner.id;
  }, 60_000);
  afterAll(async () => {
    await db?.end();
    await env?.teardown();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  /** Worker #1, in a child process: its read model writes as they land, in order. */
  function startWorkerOne(taskQueue: string, blockAfter: 'PENDING' | 'PROCESSING', holdCharge = false) {
    const child: ChildProcess = spawn(
      process.execPath,
      ['--import', 'tsx', 'test/workflow/killed-worker.ts'],
      {
        cwd: ROOT,
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        env: {
          ...process.env,
          KILLED_WORKER: JSON.stringify({
            address: env.address,
            namespace: env.namespace ?? 'default',
            taskQueue,
            bundlePath,
            databaseUrl: testDatabaseUrl(),
            chargeId: CHARGE_ID,
            pixCopyPaste: '00020101021226990014br.gov.bcb.pix-FIRST',
            blockAfter,
            holdCharge,
          }),
        },
      },
    );
    const writes: PayoutRecord[] = [];
    let killed = false;
    let died: (err: Error) => void = () => {};
    const dead = new Promise<never>((_, reject) => (died = reject));
    dead.catch(() => {});
    const ready = gate();
    const blocked = gate<PayoutRecord>();
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      child.once('exit', (code, signal) => resolve(signal ?? code)),
    );
    child.on('message', (m: KilledWorkerMessage) => {
      if (m.kind === 'ready') ready.open();
      if (m.kind !== 'recordPayout') return;
      writes.push(m.record);
      if (m.blocked) blocked.open(m.record);
    });
    // A child that dies on its own (bad config) fails the test instead of leaving it waiting.
    void exited.then((how) => {
      if (!killed) died(new Error(`worker #1 exited before its side effect (${String(how)})`));
    });
    return {
      writes,
      ready: Promise.race([ready.promise, dead]),
      blocked: Promise.race([blocked.promise, dead]),
      async kill() {
        killed = true;
        child.kill('SIGKILL');
        expect(await exited).toBe('SIGKILL');
      },
      release: () => child.send('release'),
      stop: () => {
        killed = true;
        child.kill('SIGKILL');
      },
    };
  }

  /** Worker #2, in this process, on worker #1's task queue: the redo lands here. */
  async function withWorkerTwo<T>(taskQueue: string, activities: object, fn: () => Promise<T>): Promise<T> {
    const worker = await isolatedWorker(env, taskQueue, activities);
    return worker.runUntil(fn);
  }

  async function readRow(payoutId: string) {
    const { rows } = await db.query<{
      status: string;
      version: number;
      failure_reason: string | null;
      pix_copy_paste: string;
      provider_charge_id: string | null;
      payment_event_id: string | null;
    }>(
      `SELECT status, version, failure_reason, pix_copy_paste, provider_charge_id, payment_event_id
         FROM payouts WHERE id = $1`,
      [payoutId],
    );
    return rows[0];
  }

  async function refundCaseOf(eventId: string) {
    const { rows } = await db.query<{ payout_id: string; status: string }>(
      'SELECT payout_id, status FROM refund_cases WHERE event_id = $1',
      [eventId],
    );
    return rows[0];
  }

  /** The task worker #1 took did time out: the scenario really was a redo, not a lucky ordering. */
  async function expectTaskTimedOut(handle: { fetchHistory(): Promise<{ events?: unknown[] | null }> }) {
    const events = ((await handle.fetchHistory()).events ?? []) as {
      workflowTaskTimedOutEventAttributes?: unknown;
    }[];
    expect(events.some((e) => e.workflowTaskTimedOutEventAttributes)).toBe(true);
  }

  test('PENDING with its pay code written, then the redo is refused the charge: FAILED wins, the held payment is refunded', async () => {
    const taskQueue = `redone-${randomUUID().slice(0, 8)}`;
    const input = { ...payoutInput(), partnerId };
    const one = startWorkerOne(taskQueue, 'PENDING');
    const handle = await (async () => {
      await one.ready;
      return env.client.workflow.start(payoutWorkflow, {
        workflowId: payoutWorkflowId(input.payoutId),
        taskQueue,
        args: [input],
        workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
      });
    })();
    try {
      const payable = await one.blocked;
      await one.kill();
      // Worker #1's side effect is in the read model: a payable code, before any of it is in history.
      expect(payable).toMatchObject({ status: 'PENDING', pixCopyPaste: expect.stringContaining('FIRST') });
      expect(await readRow(input.payoutId)).toMatchObject({ status: 'PENDING', version: payable.version });

      // A payment comes while no worker runs: the redone task sees it before it knows any charge id.
      const payment = pixReceived(input.payoutId);
      await handle.signal(providerEventSignal, payment);

      const bookkeeping = real();
      const fake = fakeActivities({
        recordPayout: (...args) => bookkeeping.recordPayout(...args),
        recordLatePayment: (req) => bookkeeping.recordLatePayment(req),
        createPixCharge: () => {
          throw ApplicationFailure.nonRetryable('charge refused', 'ProviderRejected');
        },
      });
      const result = await withWorkerTwo(taskQueue, fake.activities, () => handle.result());

      expect(result).toMatchObject({ status: 'FAILED', failureReason: 'charge_creation_failed' });
      expect(fake.callsOf('createPixCharge')).toHaveLength(1);
      await expectTaskTimedOut(handle);
      const redoWrites = fake.callsOf('recordPayout').map((args) => args[0] as PayoutRecord);
      const failed = redoWrites.find((w) => w.status === 'FAILED');
      expect(failed?.version).toBeGreaterThanOrEqual(payable.version);
      // The read model, written in the order above by the real activity: FAILED, no payable code left.
      expect(await readRow(input.payoutId)).toMatchObject({
        status: 'FAILED',
        failure_reason: 'charge_creation_failed',
        pix_copy_paste: '',
        provider_charge_id: null,
      });
      expect(fake.callsOf('recordLatePayment')).toEqual([
        [expect.objectContaining({ event: payment, kind: 'late_payment' })],
      ]);
      expect(await refundCaseOf(payment.eventId)).toEqual({ payout_id: input.payoutId, status: 'open' });
    } finally {
      one.stop();
      await terminateIfRunning(handle);
    }
  });

  test('PROCESSING with payment A written in a later task, then its redo gets another charge: A is refunded while the read model still names it, B settles', async () => {
    const taskQueue = `redone-${randomUUID().slice(0, 8)}`;
    const input = { ...payoutInput(), partnerId };
    // Payment A comes with the start, on the charge worker #1 is given: that task settles on A.
    const paymentA = pixReceived(input.payoutId);
    const one = startWorkerOne(taskQueue, 'PROCESSING', true);
    await one.ready;
    const handle = await env.client.workflow.signalWithStart(payoutWorkflow, {
      workflowId: payoutWorkflowId(input.payoutId),
      taskQueue,
      args: [input],
      signal: providerEventSignal,
      signalArgs: [paymentA],
      workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
    });
    // The charge is held until the first task is in history (with PENDING v1): the kill then hits a
    // later task, the one that creates the charge and writes PROCESSING, and the redo shares the
    // run's start time with it, so the read model orders their writes by version alone.
    await firstTaskCompleted(handle);
    one.release();
    try {
      const processing = await one.blocked;
      await one.kill();
      expect(processing).toMatchObject({ status: 'PROCESSING', paymentEventId: paymentA.eventId });
      expect(one.writes.map((w) => w.status)).toEqual(['PENDING', 'PENDING', 'PROCESSING']);

      // The redo's provider answers another charge (a provider that does not dedupe on the payout id,
      // or whose first charge was lost): A, on the first charge, is now a payment on another charge.
      const bookkeeping = real();
      const refundOfA = gate<string>();
      const fake = fakeActivities({
        recordPayout: (...args) => bookkeeping.recordPayout(...args),
        recordLatePayment: async (req) => {
          const result = await bookkeeping.recordLatePayment(req);
          if (req.event.eventId === paymentA.eventId) refundOfA.open(result.outcome);
          return result;
        },
        createPixCharge: async () => ({
          chargeId: RETRY_CHARGE_ID,
          pixCopyPaste: '00020101021226990014br.gov.bcb.pix-SECOND',
          expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
        }),
      });
      const result = await withWorkerTwo(taskQueue, fake.activities, async () => {
        // The refund is decided while the payout is live, and the read model still holds worker #1's
        // PROCESSING on A (the redo's interim writes carry versions it already has): the refund case
        // must open all the same, since only a COMPLETED payout settles a payment.
        expect(await refundOfA.promise).toBe('opened');
        expect(await readRow(input.payoutId)).toMatchObject({
          status: 'PROCESSING',
          payment_event_id: paymentA.eventId,
        });
        const paymentB = pixReceived(input.payoutId, { chargeId: RETRY_CHARGE_ID });
        await handle.signal(providerEventSignal, paymentB);
        await handle.signal(
          providerEventSignal,
          settlementCompleted(input.payoutId, { chargeId: RETRY_CHARGE_ID }),
        );
        const done = await handle.result();
        expect(done).toMatchObject({ status: 'COMPLETED', paymentEventId: paymentB.eventId });
        return done;
      });
      await expectTaskTimedOut(handle);
      expect(fake.callsOf('createPixCharge')).toHaveLength(1);
      expect(fake.callsOf('recordLatePayment')).toEqual([
        [expect.objectContaining({ event: paymentA, kind: 'wrong_charge' })],
      ]);
      expect(await refundCaseOf(paymentA.eventId)).toEqual({ payout_id: input.payoutId, status: 'open' });
      expect(await readRow(input.payoutId)).toMatchObject({
        status: 'COMPLETED',
        provider_charge_id: RETRY_CHARGE_ID,
        payment_event_id: result.paymentEventId,
      });
      // Now that the payout is COMPLETED on B: a redelivered B opens nothing, a redelivered A stays refunded.
      const again = (eventId: string, chargeId: string) =>
        openRefundCase(db, {
          eventId,
          payoutId: input.payoutId,
          chargeId,
          amountBrl: '100.00',
          reason: 'redelivered',
          kind: 'late_payment',
        }).then((r) => r.outcome);
      expect(await again(result.paymentEventId!, RETRY_CHARGE_ID)).toBe('payment_settles_its_payout');
      expect(await again(paymentA.eventId, CHARGE_ID)).toBe('already_open');
    } finally {
      one.stop();
      await terminateIfRunning(handle);
    }
  });
});

/** Waits for the first WorkflowTaskCompleted in the history (worker #1's task heartbeat). */
const firstTaskCompleted = (handle: WorkflowHandle) =>
  until('the first workflow task completed', async () =>
    (await historyOf(handle)).some((e) => e.workflowTaskCompletedEventAttributes) ? true : undefined,
  );

/** A payout left running with no worker would hold the test server's clock for the next test. */
async function terminateIfRunning(handle: {
  describe(): Promise<{ status: { name: string } }>;
  terminate(reason?: string): Promise<unknown>;
}): Promise<void> {
  const { status } = await handle.describe();
  if (status.name === 'RUNNING') await handle.terminate('test over');
}
