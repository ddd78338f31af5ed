import Fastify from 'fastify';

export { freePort } from '../../dev/local/infra/ports';

export interface Delivery {
  token: string;
  at: number;
  status: number;
}

export interface WebhookReceiver {
  url: string;
  /** Every POST received, answered or not with 2xx. */
  deliveries: Delivery[];
  /** The next `n` deliveries are answered 500. */
  failNext(n: number): void;
  /** The next token whose delivery was answered 200, in arrival order. */
  takeToken(timeoutMs?: number): Promise<string>;
  close(): Promise<void>;
}

/** The service's webhook endpoint as the sandbox sees it: a real HTTP server on loopback. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  // Closing drops the connections still open: one left behind by a sandbox that was closed (and
  // restarted) within a test file held close() for about a minute otherwise.
  const app = Fastify({ logger: false, forceCloseConnections: true });
  const deliveries: Delivery[] = [];
  const accepted: string[] = [];
  const waiters: ((token: string) => void)[] = [];
  let failures = 0;

  app.post<{ Body: { token: string } }>('/webhooks/sandbox', async (request, reply) => {
    const status = failures > 0 ? 500 : 200;
    if (failures > 0) failures -= 1;
    const token = request.body.token;
    deliveries.push({ token, at: Date.now(), status });
    if (status === 200) {
      const waiter = waiters.shift();
      if (waiter) waiter(token);
      else accepted.push(token);
    }
    return reply.status(status).send(status === 200 ? { received: true } : { error: 'try again' });
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (typeof address !== 'object' || !address) throw new Error('receiver has no address');

  return {
    url: `http://127.0.0.1:${address.port}/webhooks/sandbox`,
    deliveries,
    failNext(n) {
      failures = n;
    },
    takeToken(timeoutMs = 15_000) {
      const ready = accepted.shift();
      if (ready !== undefined) return Promise.resolve(ready);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(onToken), 1);
          reject(new Error(`no webhook within ${timeoutMs} ms`));
        }, timeoutMs);
        const onToken = (token: string) => {
          clearTimeout(timer);
          resolve(token);
        };
        waiters.push(onToken);
      });
    },
    close: () => app.close(),
  };
}
