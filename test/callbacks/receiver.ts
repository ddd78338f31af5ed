import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from '../support/until';

export interface ReceivedCallback {
  path: string;
  headers: http.IncomingHttpHeaders;
  rawBody: Buffer;
  receivedAt: number;
}

/**
 * A partner's callback endpoint on loopback: a real HTTP server that records every request and
 * answers with whatever `respond` says for the n-th request (1-based), after it settles when it is
 * a promise (to change state before the sender hears back); 'hang' never answers.
 */
export interface Receiver {
  url: string;
  received: ReceivedCallback[];
  respond: (n: number, req: ReceivedCallback) => number | 'hang' | Promise<number>;
  /** Requests left hanging whose sender hung up on them (it gave up waiting). */
  abandoned: number;
  /** Resolves once `count` requests matching `filter` have arrived. */
  waitFor(
    count: number,
    filter?: (r: ReceivedCallback) => boolean,
    timeoutMs?: number,
  ): Promise<ReceivedCallback[]>;
  close(): Promise<void>;
}

export async function startReceiver(respond: Receiver['respond'] = () => 200): Promise<Receiver> {
  const hanging = new Set<http.ServerResponse>();
  const receiver: Receiver = {
    url: '',
    received: [],
    respond,
    abandoned: 0,
    waitFor(count, filter = () => true, timeoutMs = 30_000) {
      return until(
        () => `${count} callbacks (the receiver got ${receiver.received.filter(filter).length})`,
        () => {
          const matching = receiver.received.filter(filter);
          return matching.length >= count ? matching : undefined;
        },
        { timeoutMs },
      );
    },
    close: () =>
      new Promise<void>((resolve) => {
        const held = [...hanging];
        hanging.clear();
        for (const res of held) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const entry: ReceivedCallback = {
        path: req.url ?? '',
        headers: req.headers,
        rawBody: Buffer.concat(chunks),
        receivedAt: Date.now(),
      };
      receiver.received.push(entry);
      const answer = await receiver.respond(receiver.received.length, entry);
      if (answer === 'hang') {
        hanging.add(res);
        res.once('close', () => {
          if (hanging.delete(res)) receiver.abandoned += 1;
        });
        return;
      }
      res
        .writeHead(answer, { 'content-type': 'text/plain' })
        .end(answer < 300 ? 'ok' : `receiver says ${answer}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callbacks`;
  return receiver;
}
