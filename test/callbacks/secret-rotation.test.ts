import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { verifyCallback } from '../../examples/verify-callback-signature';
import { generateCallbackSecret } from '../../src/adapters/callbacks/signature';
import { CallbackOverlapActive, rotateCallbackSecret } from '../../src/adapters/db/credential-rotation';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { callbackEventId } from '../../src/domain/callback-event';
import type { PayoutRecord } from '../../src/domain/payout';
import { callbackDeliveryWorkflow } from '../../src/workflows/callback.workflow';
import { testDatabaseUrl } from '../support/env';
import { completedPayout } from '../support/payouts';
import { createDevServerEnv } from '../support/temporal';
import { createCallbackWorker, partnerWithCallback, testSecrets } from './fixtures';
import { startReceiver, type Receiver } from './receiver';

// A callback secret replaced with an overlap (docs/callbacks.md "Changing the secret"): real
// delivery workflow, PostgreSQL and HTTP receiver. During the overlap each callback carries a
// signature by each secret, so a receiver holding either one accepts it; after it, only the new one.
describe('callback secret rotation', () => {
  let env: TestWorkflowEnvironment;
  let db: Db;
  let worker: Worker;
  let running: Promise<void>;
  let receiver: Receiver;
  const taskQueue = `callbacks-${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    env = await createDevServerEnv();
    db = createPool(testDatabaseUrl(), 3);
    worker = await createCallbackWorker(env, db, taskQueue);
    running = worker.run();
    receiver = await startReceiver();
  }, 120_000);
  afterAll(async () => {
    worker?.shutdown();
    await running;
    await receiver?.close();
    await db?.end();
    await env?.teardown();
  });

  const deliverOne = async (payout: PayoutRecord) => {
    const before = receiver.received.length;
    await env.client.workflow.execute(callbackDeliveryWorkflow, {
      taskQueue,
      workflowId: `callback-rotation-${payout.id}`,
      args: [
        {
          eventId: callbackEventId(payout.id, 'payout.completed'),
          event: 'payout.completed',
          payout,
          retry: { initialIntervalMs: 200, backoffCoefficient: 2, maximumIntervalMs: 1_000 },
        },
      ],
    });
    expect(receiver.received).toHaveLength(before + 1);
    const got = receiver.received[before]!;
    return (secret: string) => verifyCallback({ rawBody: got.rawBody, headers: got.headers, secret }).valid;
  };

  it('signs with both secrets during the overlap, then with the new one only', async () => {
    const first = generateCallbackSecret();
    const partnerId = await partnerWithCallback(db, { url: receiver.url, secret: first });

    const second = generateCallbackSecret();
    const rotation = (await rotateCallbackSecret(db, partnerId, second, 2, testSecrets))!;
    const until = Date.parse(rotation.previousValidUntil!);
    expect(until).toBeGreaterThan(Date.now());
    expect(until).toBeLessThanOrEqual(Date.now() + 2_500);

    const during = await deliverOne(completedPayout({ partnerId }));
    expect(during(first)).toBe(true);
    expect(during(second)).toBe(true);
    expect(during(generateCallbackSecret())).toBe(false);
    expect(receiver.received.at(-1)!.headers['webhook-signature']).toMatch(/^v1,\S+ v1,\S+$/);

    await new Promise((resolve) => setTimeout(resolve, Math.max(0, until - Date.now()) + 200));
    const after = await deliverOne(completedPayout({ partnerId }));
    expect(after(second)).toBe(true);
    expect(after(first)).toBe(false);
    expect(receiver.received.at(-1)!.headers['webhook-signature']).toMatch(/^v1,\S+$/);
  });

  it('without an overlap the old secret stops at once; during an overlap another one is refused', async () => {
    const first = generateCallbackSecret();
    const partnerId = await partnerWithCallback(db, { url: receiver.url, secret: first });
    const second = generateCallbackSecret();
    expect(
      (await rotateCallbackSecret(db, partnerId, second, 0, testSecrets))!.previousValidUntil,
    ).toBeNull();
    const immediate = await deliverOne(completedPayout({ partnerId }));
    expect([immediate(first), immediate(second)]).toEqual([false, true]);

    const third = generateCallbackSecret();
    const { previousValidUntil } = (await rotateCallbackSecret(db, partnerId, third, 3600, testSecrets))!;
    // A second overlap would end `second`, which receivers may still check (docs/decisions.md D70).
    const refused = await rotateCallbackSecret(
      db,
      partnerId,
      generateCallbackSecret(),
      3600,
      testSecrets,
    ).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(CallbackOverlapActive);
    expect((refused as CallbackOverlapActive).until).toBe(previousValidUntil);
    const kept = await deliverOne(completedPayout({ partnerId }));
    expect([kept(second), kept(third)]).toEqual([true, true]);

    // Without an overlap it goes ahead, and ends both replaced secrets at once (a leaked one).
    const fourth = generateCallbackSecret();
    await rotateCallbackSecret(db, partnerId, fourth, 0, testSecrets);
    const leaked = await deliverOne(completedPayout({ partnerId }));
    expect([leaked(second), leaked(third), leaked(fourth)]).toEqual([false, false, true]);
  });

  it('refuses a partner without a callback, and an unknown partner is null', async () => {
    const partnerId = await partnerWithCallback(db);
    await expect(
      rotateCallbackSecret(db, partnerId, generateCallbackSecret(), 60, testSecrets),
    ).rejects.toThrow(/no callback/);
    expect(
      await rotateCallbackSecret(db, randomUUID(), generateCallbackSecret(), 60, testSecrets),
    ).toBeNull();
    await expect(
      rotateCallbackSecret(db, partnerId, generateCallbackSecret(), 31 * 86_400, testSecrets),
    ).rejects.toThrow(RangeError);
  });
});
