import { generateCallbackSecret } from '../../src/adapters/callbacks/signature';
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { listCallbackEvents } from '../../src/adapters/db/callbacks-repo';
import { createPool, type Db } from '../../src/adapters/db/pool';
import {
  callbackAttemptSchedule,
  callbackEventId,
  DEFAULT_CALLBACK_RETRY,
} from '../../src/domain/callback-event';
import { callbackDeliveryWorkflow } from '../../src/workflows/callback.workflow';
import { testDatabaseUrl } from '../support/env';
import { createTimeSkippingEnv } from '../support/temporal';
import { createCallbackWorker, partnerWithCallback } from './fixtures';
import { completedPayout } from '../support/payouts';
import { startReceiver, type Receiver } from './receiver';

// The 24 h give-up with the production retry policy, on the Java test server: durable timers are
// skipped, every attempt is still a real POST to a real receiver and a real row in PostgreSQL.
describe('callback delivery gives up after 24 h (time skipping)', () => {
  let env: TestWorkflowEnvironment;
  let db: Db;
  let receiver: Receiver;

  beforeAll(async () => {
    env = await createTimeSkippingEnv();
    db = createPool(testDatabaseUrl(), 3);
    receiver = await startReceiver(() => 503);
  }, 120_000);
  afterAll(async () => {
    await receiver?.close();
    await db?.end();
    await env?.teardown();
  });

  it('retries with backoff for 24 h, makes a last attempt at the deadline, then records the give-up', async () => {
    const secret = generateCallbackSecret();
    const partnerId = await partnerWithCallback(db, { url: receiver.url, secret });
    const payout = completedPayout({ partnerId });
    const eventId = callbackEventId(payout.id, 'payout.completed');
    const taskQueue = `callbacks-${randomUUID().slice(0, 8)}`;
    const worker = await createCallbackWorker(env, db, taskQueue);

    const result = await worker.runUntil(
      env.client.workflow.execute(callbackDeliveryWorkflow, {
        taskQueue,
        workflowId: `callback-give-up-${payout.id}`,
        args: [{ eventId, event: 'payout.completed', payout }],
      }),
    );

    const expectedAttempts = callbackAttemptSchedule(DEFAULT_CALLBACK_RETRY).length;
    expect(expectedAttempts).toBe(33);
    expect(result).toMatchObject({ outcome: 'gave_up', attempts: expectedAttempts });
    const elapsed = Date.parse(result.finishedAt) - Date.parse(result.startedAt);
    expect(elapsed).toBeGreaterThanOrEqual(24 * 3_600_000);
    expect(elapsed).toBeLessThan(24 * 3_600_000 + 60_000);

    expect(receiver.received).toHaveLength(expectedAttempts);
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id']))).toEqual(new Set([eventId]));

    const [event] = await listCallbackEvents(db, partnerId);
    expect(event).toMatchObject({ eventId, state: 'gave_up', attemptCount: expectedAttempts });
    expect(event!.attempts.map((a) => a.attempt)).toEqual(
      Array.from({ length: expectedAttempts }, (_, i) => i + 1),
    );
    expect(event!.attempts.every((a) => a.statusCode === 503)).toBe(true);
  });
});
