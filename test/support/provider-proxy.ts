import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * An HTTP proxy between the service and the provider sandbox, which the tests control:
 * - `takeDown()` closes its port (connections refused, open ones reset) until `bringBack()`, as a
 *   provider outage looks from the service;
 * - it counts the charges the provider really created (201 answers to POST /pix/charges) per
 *   external id, so a test proves "exactly one charge" at the provider, not at our database;
 * - it counts every charge-creation and settlement request per external id, whatever the answer
 *   (a repeated charge is answered 200, so counting 201s alone could never see a second request);
 * - `hold(route)` keeps requests to a route waiting until released, so a caller can be caught busy
 *   (e.g. a worker SIGKILLed in the middle of an activity's HTTP call).
 */
export interface ProviderProxy {
  url: string;
  takeDown(): Promise<void>;
  bringBack(): Promise<void>;
  /** external_id -> charges the provider created for it (201 answers). */
  chargesCreated(): Map<string, number>;
  /** external_id -> every POST /pix/charges that reached the provider for it, whatever the answer. */
  chargeRequests(): Map<string, number>;
  /** external_id -> every POST /settlements that reached the provider for it, whatever the answer. */
  settlementRequests(): Map<string, number>;
  /** Requests that reached the provider, by "METHOD /path-prefix". */
  requests(): Map<string, number>;
  /** Requests that reached the provider, by "METHOD /whole/path" (no query): one charge's reads, say. */
  pathRequests(): Map<string, number>;
  /**
   * Holds every request to `route` ("POST /settlements", as `requests()` names them) until
   * `release()`; `arrived` resolves when the first one is held. A held request is forwarded on
   * release whether or not its caller is still there: the provider acts on it, the answer is lost.
   */
  hold(route: string): { arrived: Promise<void>; release(): void };
  close(): Promise<void>;
}

export async function startProviderProxy(targetUrl: string, port: number): Promise<ProviderProxy> {
  const charges = new Map<string, number>();
  const chargeRequests = new Map<string, number>();
  const settlementRequests = new Map<string, number>();
  const requests = new Map<string, number>();
  const pathRequests = new Map<string, number>();
  const bump = (counts: Map<string, number>, key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  /** The request body's external_id; undefined for a body that has none (the provider refuses it). */
  const externalIdOf = (body: Buffer): string | undefined => {
    try {
      const id = (JSON.parse(body.toString()) as { external_id?: unknown }).external_id;
      return typeof id === 'string' ? id : undefined;
    } catch {
      return undefined;
    }
  };
  const sockets = new Set<Socket>();
  const holds = new Map<string, { arrive(): void; released: Promise<void> }>();

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const route = `${req.method} ${(req.url ?? '').split('/').slice(0, 3).join('/')}`;
    bump(requests, route);
    const path = (req.url ?? '').split('?')[0];
    bump(pathRequests, `${req.method} ${path}`);
    const externalId = req.method === 'POST' ? externalIdOf(body) : undefined;
    // Counted as it arrives, before forwarding: a request whose answer is lost counts all the same.
    if (externalId !== undefined && path === '/pix/charges') bump(chargeRequests, externalId);
    if (externalId !== undefined && path === '/settlements') bump(settlementRequests, externalId);
    const held = holds.get(route);
    if (held) {
      held.arrive();
      await held.released;
    }
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
      if (externalId !== undefined && path === '/pix/charges' && upstream.status === 201) {
        bump(charges, externalId);
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
    chargeRequests: () => new Map(chargeRequests),
    settlementRequests: () => new Map(settlementRequests),
    requests: () => new Map(requests),
    pathRequests: () => new Map(pathRequests),
    hold(route) {
      let arrive!: () => void;
      let release!: () => void;
      const arrived = new Promise<void>((resolve) => (arrive = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      holds.set(route, { arrive, released });
      return {
        arrived,
        release: () => {
          holds.delete(route);
          release();
        },
      };
    },
    close: unlisten,
  };
}
