import { createCallbackActivities } from '../../src/activities/callback.activities';
import { createLogger } from '../../src/observability/logger';
import { generateCallbackSecret } from '../../src/adapters/callbacks/signature';
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { verifyCallback } from '../../examples/verify-callback-signature';
import { listCallbackEvents } from '../../src/adapters/db/callbacks-repo';
import { setPartnerCallback } from '../../src/adapters/db/partners-repo';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { callbackEventId } from '../../src/domain/callback-event';
import { toPayoutResponse, type PayoutRecord } from '../../src/domain/payout';
import type { CallbackDeliveryInput } from '../../src/workflows/callback.contract';
import { callbackDeliveryWorkflow } from '../../src/workflows/callback.workflow';
import { testDatabaseUrl } from '../support/env';
import { historyOf, type HistoryEvent } from '../support/history';
import { createDevServerEnv } from '../support/temporal';
import { until } from '../support/until';
import { createCallbackWorker, partnerWithCallback, testSecrets } from './fixtures';
import { completedPayout } from '../support/payouts';
import { startReceiver, type Receiver } from './receiver';
import { DEFAULT_NETWORK } from '../support/network';

// Delivery on a real Temporal dev server, real PostgreSQL and a real HTTP receiver on loopback
// (allowed explicitly: it is refused by default). Backoff is shortened through the workflow input.
describe('callback delivery workflow', () => {
  let env: TestWorkflowEnvironment;
  let db: Db;
  let worker: Worker;
  let running: Promise<void>;
  let receiver: Receiver;
  const taskQueue = `callbacks-${randomUUID().slice(0, 8)}`;
  const secret = generateCallbackSecret();
  const fastRetry = { initialIntervalMs: 200, backoffCoefficient: 2, maximumIntervalMs: 1_000 };

  const startWorker = async () => {
    worker = await createCallbackWorker(env, db, taskQueue);
    running = worker.run();
  };

  beforeAll(async () => {
    env = await createDevServerEnv();
    db = createPool(testDatabaseUrl(), 3);
    await startWorker();
  }, 120_000);
  afterAll(async () => {
    worker?.shutdown();
    await running;
    await db?.end();
    await env?.teardown();
  });
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(() => receiver.close());

  const deliver = (payout: PayoutRecord, retry: CallbackDeliveryInput['retry'] = fastRetry) =>
    env.client.workflow.execute(callbackDeliveryWorkflow, {
      taskQueue,
      workflowId: `callback-test-${payout.id}`,
      args: [
        { eventId: callbackEventId(payout.id, 'payout.completed'), event: 'payout.completed', payout, retry },
      ],
    });

  it('retries a receiver that fails twice; the third attempt delivers the same event, signed afresh', async () => {
    const partnerId = await partnerWithCallback(db, { url: receiver.url, secret });
    const payout = completedPayout({ partnerId });
    receiver.respond = (n) => (n <= 2 ? 500 : 200);

    const result = await deliver(payout);

    expect(result).toMatchObject({ outcome: 'delivered', attempts: 3 });
    expect(receiver.received).toHaveLength(3);
    const eventId = `evt_${payout.id}_completed`;
    const bodies = new Set(receiver.received.map((r) => r.rawBody.toString('utf8')));
    expect(bodies.size).toBe(1);
    for (const got of receiver.received) {
      expect(got.headers['webhook-id']).toBe(eventId);
      expect(verifyCallback({ rawBody: got.rawBody, headers: got.headers, secret }).valid).toBe(true);
    }
    expect(JSON.parse([...bodies][0]!)).toEqual({
      event: 'payout.completed',
      payout: toPayoutResponse(payout, DEFAULT_NETWORK),
    });
    // Backoff: 200 ms, then 400 ms.
    const gaps = receiver.received.slice(1).map((r, i) => r.receivedAt - receiver.received[i]!.receivedAt);
    expect(gaps[0]).toBeGreaterThanOrEqual(180);
    expect(gaps[1]).toBeGreaterThanOrEqual(380);

    const [event] = await listCallbackEvents(db, partnerId);
    expect(event).toMatchObject({ eventId, payoutId: payout.id, state: 'delivered', attemptCount: 3 });
    expect(event!.attempts.map((a) => [a.attempt, a.statusCode])).toEqual([
      [1, 500],
      [2, 500],
      [3, 200],
    ]);
    expect(event!.attempts[0]).toMatchObject({
      url: receiver.url,
      responseExcerpt: 'receiver says 500',
      error: null,
    });
  });

  it("names the worker's configured settlement network, and sends an earlier attempt's body as it was built", async () => {
    const partnerId = await partnerWithCallback(db, { url: receiver.url, secret });
    const payout = completedPayout({ partnerId });
    const testnet = {
      name: 'Arbitrum Sepolia',
      chainId: 421614,
      explorerUrl: 'https://sepolia.arbiscan.io/',
    };
    const activities = createCallbackActivities({
      network: testnet,
      secrets: testSecrets,
      db,
      logger: createLogger({ level: 'silent', name: 'test' }),
      sender: { timeoutMs: 2_000, requireHttps: false, allowPrivateNetworks: true },
    });
    const ref = {
      eventId: callbackEventId(payout.id, 'payout.completed'),
      partnerId,
      payoutId: payout.id,
      event: 'payout.completed' as const,
    };

    await activities.sendPartnerCallback({ ...ref, attempt: 1, payout });
    // Attempts scheduled before the body was built at send time carry the body itself.
    await activities.sendPartnerCallback({ ...ref, attempt: 2, body: '{"built":"earlier"}' });

    const [first, second] = receiver.received.map((r) => r.rawBody.toString('utf8'));
    expect(JSON.parse(first!).payout).toMatchObject({
      blockchain_network: 'Arbitrum Sepolia',
      blockchain_chain_id: 421614,
      block_explorer_url: `https://sepolia.arbiscan.io/tx/${payout.blockchainTxId}`,
    });
    expect(second).toBe('{"built":"earlier"}');
  });

  it('sends nothing when the partner has no callback configured', async () => {
    const partnerId = await partnerWithCallback(db);
    const payout = completedPayout({ partnerId });

    expect(await deliver(payout)).toMatchObject({ outcome: 'not_configured', attempts: 0 });
    expect(receiver.received).toHaveLength(0);
    const [event] = await listCallbackEvents(db, partnerId);
    expect(event).toMatchObject({ state: 'skipped', attemptCount: 0, attempts: [] });
  });

  it('reads URL and secret at every attempt: a corrected URL is used by the next retry', async () => {
    const broken = await startReceiver(() => 404);
    try {
      const partnerId = await partnerWithCallback(db, { url: broken.url, secret: generateCallbackSecret() });
      const payout = completedPayout({ partnerId });
      // The partner fixes its endpoint (and rotates its secret) while we are retrying.
      broken.respond = async () => {
        await setPartnerCallback(db, partnerId, { url: `${receiver.url}?token=abc`, secret }, testSecrets);
        return 404;
      };

      expect(await deliver(payout)).toMatchObject({
        outcome: 'delivered',
        attempts: 2,
      });
      expect(broken.received).toHaveLength(1);
      const [got] = receiver.received;
      expect(got!.path).toBe('/callbacks?token=abc');
      expect(verifyCallback({ rawBody: got!.rawBody, headers: got!.headers, secret }).valid).toBe(true);
      const [event] = await listCallbackEvents(db, partnerId);
      // The partner's query string (its own token) is kept out of the operator's records.
      expect(event!.attempts.map((a) => [a.url, a.statusCode])).toEqual([
        [broken.url, 404],
        [receiver.url, 200],
      ]);
    } finally {
      await broken.close();
    }
  });

  it('stops when the partner clears its callback while retries are pending', async () => {
    const partnerId = await partnerWithCallback(db, { url: receiver.url, secret });
    const payout = completedPayout({ partnerId });
    receiver.respond = async () => {
      await setPartnerCallback(db, partnerId, null, testSecrets);
      return 500;
    };

    expect(await deliver(payout)).toMatchObject({ outcome: 'not_configured', attempts: 1 });
    expect(receiver.received).toHaveLength(1);
    const [event] = await listCallbackEvents(db, partnerId);
    expect(event).toMatchObject({ state: 'skipped', attemptCount: 1 });
  });

  it('loses nothing when the worker stops between attempts', async () => {
    const partnerId = await partnerWithCallback(db, { url: receiver.url, secret });
    const payout = completedPayout({ partnerId });
    receiver.respond = (n) => (n === 1 ? 500 : 200);
    const handle = await env.client.workflow.start(callbackDeliveryWorkflow, {
      taskQueue,
      workflowId: `callback-test-${payout.id}`,
      args: [
        {
          eventId: callbackEventId(payout.id, 'payout.completed'),
          event: 'payout.completed',
          payout,
          // Long enough for the worker to be stopped between the timer's start and its end.
          retry: { ...fastRetry, initialIntervalMs: 2_000, maximumIntervalMs: 2_000 },
        },
      ],
    });
    const history = (what: string, has: (e: HistoryEvent) => boolean) =>
      until(what, async () => ((await historyOf(handle)).some(has) ? true : undefined));
    // The first attempt failed and the workflow sleeps until the retry: stop the worker now.
    await history('the retry timer started', (e) => Boolean(e.timerStartedEventAttributes));
    worker.shutdown();
    await running;
    // The retry comes due while no worker polls: the next attempt waits in the task queue.
    await history('the retry timer fired', (e) => Boolean(e.timerFiredEventAttributes));
    expect(receiver.received).toHaveLength(1);

    await startWorker();
    expect(await handle.result()).toMatchObject({ outcome: 'delivered', attempts: 2 });
    expect(receiver.received.map((r) => r.headers['webhook-id'])).toEqual([
      `evt_${payout.id}_completed`,
      `evt_${payout.id}_completed`,
    ]);
  });
});
