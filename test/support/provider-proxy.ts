import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * An HTTP proxy between the service and the provider sandbox, which the tests control:
 * - `takeDown()` closes its port (connections refused, open ones reset) until `bringBack()`, as a
 *   provider outage looks from the service;
 * - it counts the charges the provider really created (201 answers to POST /pix/charges) per
 *   external id, so a test proves "exactly one charge" at the provider, not at our database.
 */
export interface ProviderProxy {
  url: string;
  takeDown(): Promise<void>;
  bringBack(): Promise<void>;
  /** external_id -> charges the provider created for it (201 answers). */
  chargesCreated(): Map<string, number>;
  /** Requests that reached the provider, by "METHOD /path-prefix". */
  requests(): Map<string, number>;
  close(): Promise<void>;
}

export async function startProviderProxy(targetUrl: string, port: number): Promise<ProviderProxy> {
  const charges = new Map<string, number>();
  const requests = new Map<string, number>();
  const sockets = new Set<Socket>();

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const route = `${req.method} ${(req.url ?? '').split('/').slice(0, 3).join('/')}`;
    requests.set(route, (requests.get(route) ?? 0) + 1);
    try {
      const upstream = await fetch(`${targetUrl}${req.url}`, {
        method: req.method,
        headers: Object.fromEntries(
          Object.entries(req.headers).filter(
            (e): e is [string, string] =>
              typeof e[1] === 'string' && e[0] !== 'host' && e[0] !== 'connection',
          ),
        ),
        ...(body.length > 0 ? { body } : {}),
      });
      const text = await upstream.text();
      if (req.method === 'POST' && req.url === '/pix/charges' && upstream.status === 201) {
        const externalId = (JSON.parse(body.toString()) as { external_id: string }).external_id;
        charges.set(externalId, (charges.get(externalId) ?? 0) + 1);
      }
      res.writeHead(upstream.status, {
        'content-type': upstream.headers.get('content-type') ?? 'text/plain',
      });
      res.end(text);
    } catch {
      res.destroy();
    }
  };

  let server: http.Server | undefined;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = http.createServer((req, res) => void handle(req, res));
      s.on('connection', (socket) => {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        server = s;
        resolve();
      });
    });
  const unlisten = async () => {
    const s = server;
    server = undefined;
    if (!s) return;
    const closed = new Promise<void>((resolve) => s.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };

  await listen();
  return {
    url: `http://127.0.0.1:${port}`,
    takeDown: unlisten,
    bringBack: listen,
    chargesCreated: () => new Map(charges),
    requests: () => new Map(requests),
    close: unlisten,
  };
}
