import Fastify, { type FastifyInstance } from 'fastify';

import { createWebhookDispatcher } from '../../dev/sandbox/webhooks';

const silent = { info: () => {}, warn: () => {}, error: () => {} };

let target: FastifyInstance;
let url: string;
let received: string[];
let receivedAt: number[];
let status: number;

beforeEach(async () => {
  received = [];
  receivedAt = [];
  status = 503;
  target = Fastify({ logger: false });
  target.post<{ Body: { token: string } }>('/hook', async (request, reply) => {
    received.push(request.body.token);
    receivedAt.push(performance.now());
    return reply.status(status).send({});
  });
  await target.listen({ port: 0, host: '127.0.0.1' });
  const address = target.server.address();
  if (typeof address !== 'object' || !address) throw new Error('no address');
  url = `http://127.0.0.1:${address.port}/hook`;
});

afterEach(async () => {
  await target.close();
});

test('gives up once the retry window is spent', async () => {
  const dispatcher = createWebhookDispatcher({ url, logger: silent, initialDelayMs: 20, maxTotalMs: 2_000 });
  dispatcher.deliver('tok', { eventId: 'evt_1', type: 'pix.received' });
  // It gives up by itself: the loop ends without close().
  while (dispatcher.pending() > 0) await new Promise((r) => setTimeout(r, 20));
  // Retried with doubling backoff (20, 40, 80 ms ...), never beyond the window: however slow the
  // machine, at most 20 + 40 + ... + 640 ms of backoff fit in 2 s (the next is 1280), so no more than
  // 7 attempts; and only a first attempt slower than 1.98 s would leave room for no retry at all.
  expect(received.length).toBeGreaterThanOrEqual(2);
  expect(received.length).toBeLessThanOrEqual(7);
  receivedAt.slice(1).forEach((at, i) => expect(at - receivedAt[i]!).toBeGreaterThanOrEqual(20 * 2 ** i - 1));
  await dispatcher.close();
});

test('close() stops retrying loops at once', async () => {
  const dispatcher = createWebhookDispatcher({ url, logger: silent, initialDelayMs: 60_000 });
  dispatcher.deliver('tok', { eventId: 'evt_2', type: 'pix.received' });
  while (received.length === 0) await new Promise((r) => setTimeout(r, 10));
  const started = Date.now();
  await dispatcher.close();
  expect(Date.now() - started).toBeLessThan(1_000);
  expect(dispatcher.pending()).toBe(0);
  // After close nothing new is sent.
  dispatcher.deliver('late', { eventId: 'evt_3', type: 'pix.received' });
  expect(dispatcher.pending()).toBe(0);
});

test('any 2xx ends the delivery', async () => {
  status = 204;
  const dispatcher = createWebhookDispatcher({ url, logger: silent });
  dispatcher.deliver('tok', { eventId: 'evt_4', type: 'settlement.completed' });
  while (dispatcher.pending() > 0) await new Promise((r) => setTimeout(r, 10));
  expect(received).toEqual(['tok']);
  await dispatcher.close();
});
