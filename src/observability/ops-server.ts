import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from './logger';

/** Serves a request and answers true, or answers false to let the next handler try. */
export type OpsHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

export interface OpsServerOptions {
  host: string;
  port: number;
  registry: Registry;
  /**
   * More Prometheus text appended to /metrics: the Temporal worker's own metrics, which its native
   * runtime exports on a private loopback port, so one scrape target covers the whole process.
   */
  extraMetrics?: () => Promise<string>;
  handlers?: OpsHandler[];
  logger: Logger;
}

export interface OpsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * The ops port (METRICS_PORT for the api, WORKER_METRICS_PORT for the worker): /metrics and, on the
 * api, the payload codec endpoint. Kept apart from the partner API so neither is ever exposed to
 * partners by the same load balancer.
 */
export async function startOpsServer(opts: OpsServerOptions): Promise<OpsServer> {
  const server: Server = createServer((req, res) => {
    void route(req, res).catch((err: unknown) => {
      opts.logger.error({ err, url: req.url }, 'ops request failed');
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('internal error\n');
    });
  });

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/metrics' && (req.method === 'GET' || req.method === 'HEAD')) {
      const own = await opts.registry.metrics();
      const extra = opts.extraMetrics ? await opts.extraMetrics() : '';
      res.writeHead(200, { 'content-type': opts.registry.contentType });
      res.end(req.method === 'HEAD' ? undefined : joinExpositions(own, extra));
      return;
    }
    for (const handler of opts.handlers ?? []) {
      if (await handler(req, res)) return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function joinExpositions(own: string, extra: string): string {
  if (!extra.trim()) return own;
  return `${own.endsWith('\n') ? own : `${own}\n`}${extra.endsWith('\n') ? extra : `${extra}\n`}`;
}

/** The Prometheus text another local exporter serves, or '' (and a warning) when it does not answer. */
export function scrapeLocal(url: string, logger: Logger): () => Promise<string> {
  let warned = false;
  return async () => {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      warned = false;
      return await res.text();
    } catch (err) {
      // Our own metrics are still worth serving; one warning per outage, not one per scrape.
      if (!warned) logger.warn({ url, err: String(err) }, 'could not read the Temporal runtime metrics');
      warned = true;
      return '';
    }
  };
}
