import Fastify, { type FastifyInstance } from 'fastify';

import { createWebhookDispatcher } from '../../dev/sandbox/webhooks';
import { until } from '../support/until';

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

/** What the dispatcher logged, by message. */
function recordingLogger() {
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const at = (level: string) => (fields: unknown, msg?: string) => {
    lines.push({ level, msg: msg ?? '', fields: fields as Record<string, unknown> });
  };
  return { logger: { info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

const settled = (dispatcher: { pending(): number }) =>
  until('the dispatcher idle', () => (dispatcher.pending() === 0 ? true : undefined));

test('gives up once the retry window is spent', async () => {
  const { logger, lines } = recordingLogger();
  const dispatcher = createWebhookDispatcher({ url, logger, initialDelayMs: 20, maxTotalMs: 2_000 });
  dispatcher.deliver('tok', { eventId: 'evt_1', type: 'pix.received' });
  // It gives up by itself, and says so: the loop ends without close().
  const abandoned = await until('the delivery abandoned', () =>
    lines.find((l) => l.msg === 'webhook delivery abandoned: retry window exhausted'),
  );
  await settled(dispatcher);
  expect(abandoned.fields.attempt).toBe(received.length);
  // Retried with doubling backoff (20, 40, 80 ms ...), never beyond the window: at most
  // 20 + 40 + ... + 640 ms of backoff fit in 2 s (the next is 1280), so no more than 7 attempts.
  const delays = lines.filter((l) => l.msg === 'webhook attempt failed').map((l) => l.fields.retry_in_ms);
  expect(delays).toEqual(delays.map((_, i) => 20 * 2 ** i));
  expect(received.length).toBeGreaterThanOrEqual(2);
  expect(received.length).toBeLessThanOrEqual(7);
  // A timer never fires early: each attempt came at least its backoff after the one before.
  receivedAt.slice(1).forEach((at, i) => expect(at - receivedAt[i]!).toBeGreaterThanOrEqual(20 * 2 ** i - 1));
  await dispatcher.close();
});

test('close() stops retrying loops at once', async () => {
  // The next attempt is ten minutes away: a close() that waited for it would outlast the test.
  const dispatcher = createWebhookDispatcher({ url, logger: silent, initialDelayMs: 600_000 });
  dispatcher.deliver('tok', { eventId: 'evt_2', type: 'pix.received' });
  await until('the first attempt', () => (received.length > 0 ? true : undefined));
  await dispatcher.close();
  expect(dispatcher.pending()).toBe(0);
  // After close nothing new is sent.
  dispatcher.deliver('late', { eventId: 'evt_3', type: 'pix.received' });
  expect(dispatcher.pending()).toBe(0);
  expect(received).toEqual(['tok']);
});

test('any 2xx ends the delivery', async () => {
  status = 204;
  const dispatcher = createWebhookDispatcher({ url, logger: silent });
  dispatcher.deliver('tok', { eventId: 'evt_4', type: 'settlement.completed' });
  await settled(dispatcher);
  expect(received).toEqual(['tok']);
  await dispatcher.close();
});
