import http from 'node:http';
import type { FastifyInstance } from 'fastify';
import { freePort } from '../../dev/local/infra/ports';
import { sandboxEnv, type ChainEndpoint } from '../../dev/local/stack-env';
import { buildSandboxApp } from '../../dev/sandbox/app';
import { loadSandboxConfig } from '../../dev/sandbox/config';

export interface RunningSandbox {
  url: string;
  app: FastifyInstance;
  close(): Promise<void>;
}

/**
 * The provider sandbox in this process on a free loopback port, settling from `walletKey` on
 * `chain` and POSTing its webhooks to `webhookUrl`; `env` adds or overrides SANDBOX_* settings.
 * Webhook retries start at 100 ms: a test waits on them.
 */
export async function startSandbox(opts: {
  chain: ChainEndpoint;
  walletKey: string;
  webhookUrl: string;
  env?: Record<string, string>;
}): Promise<RunningSandbox> {
  const port = await freePort();
  const app = buildSandboxApp(
    loadSandboxConfig({
      ...sandboxEnv({ port, webhookUrl: opts.webhookUrl, chain: opts.chain, walletKey: opts.walletKey }),
      SANDBOX_LOG_LEVEL: process.env.TEST_LOG ? 'debug' : 'silent',
      ...opts.env,
    }),
    { webhook: { initialDelayMs: 100, maxDelayMs: 1_000 } },
  );
  await app.listen({ host: '127.0.0.1', port });
  return { url: `http://127.0.0.1:${port}`, app, close: () => app.close() };
}

export interface WebhookTap {
  url: string;
  /** Every webhook token that passed, first delivery first (a redelivery of one is not repeated). */
  tokens: string[];
  close(): Promise<void>;
}

/**
 * Between the sandbox and the api: keeps each webhook's token and forwards the request to
 * `forwardTo` (the api's origin), answering what the api answered. A test then knows exactly which
 * tokens its stack's provider sent, without reading what other test files wrote.
 */
export async function startWebhookTap(forwardTo: string): Promise<WebhookTap> {
  const tokens: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      const token = (JSON.parse(body) as { token?: string }).token;
      if (token && !tokens.includes(token)) tokens.push(token);
      fetch(`${forwardTo}${req.url}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
        .then(async (r) => {
          res.writeHead(r.status, { 'content-type': 'application/json' });
          res.end(await r.text());
        })
        .catch(() => res.destroy());
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    tokens,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Where the sandbox's webhooks go instead of the api, so a test holds real provider tokens and decides
 * how, how often and to which replica each is delivered. `captured` holds them in arrival order.
 */
export async function startWebhookCapture(): Promise<{
  url: string;
  captured: string[];
  close(): Promise<void>;
}> {
  const captured: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      captured.push((JSON.parse(body) as { token: string }).token);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}/webhooks/sandbox`,
    captured,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
