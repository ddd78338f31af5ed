import { request } from 'node:http';
import net from 'node:net';
import type { Db } from '../../src/adapters/db/pool';
import { call, parseJson, type ApiResponse } from '../support/http';

export { call, post, readResponse, type ApiResponse } from '../support/http';

/**
 * A request sent from a chosen client address. Loopback is a whole /8 on Linux, so 127.x.y.z are as
 * many distinct clients on this machine; per-address buckets live in the test run's one PostgreSQL,
 * so a test takes a fresh address (freshClientAddress) to start with full buckets.
 */
export function callFrom(
  localAddress: string,
  baseUrl: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<ApiResponse> {
  const url = new URL(`${baseUrl}${path}`);
  const body = init.body ?? '';
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: init.method ?? 'GET',
        localAddress,
        headers: { ...init.headers, ...(body ? { 'content-length': String(Buffer.byteLength(body)) } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (typeof value === 'string') headers.set(name, value);
          }
          resolve({ status: res.statusCode!, headers, text, json: parseJson(text) });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export function freshClientAddress(): string {
  return `127.${[0, 0, 0].map(() => 1 + Math.floor(Math.random() * 250)).join('.')}`;
}

export function getPayout(baseUrl: string, apiKey: string | undefined, id: string): Promise<ApiResponse> {
  return call(baseUrl, `/v1/payouts/${id}`, { headers: apiKey === undefined ? {} : { 'x-api-key': apiKey } });
}

/**
 * The error contract of docs/decisions.md D13: a JSON object with exactly one key, `error`, a
 * non-empty string, and nothing that looks like a stack trace.
 */
export function expectErrorBody(res: Pick<ApiResponse, 'json' | 'text'>, message?: string): void {
  expect(res.json).toEqual({ error: expect.any(String) });
  const { error } = res.json as { error: string };
  expect(error.length).toBeGreaterThan(0);
  if (message !== undefined) expect(error).toBe(message);
  expect(res.text).not.toMatch(/\bat .+:\d+:\d+|node_modules|\.ts:\d+/);
}

export function expectError(res: ApiResponse, status: number, message?: string): void {
  expect({ status: res.status, body: res.json }).toEqual({ status, body: expect.anything() });
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expectErrorBody(res, message);
}

/** Keys of the partner-facing Payout (docs/api.md), without the two timestamps absent until COMPLETED. */
export const PAYOUT_KEYS = [
  'id',
  'partner_id',
  'status',
  'amount_brl',
  'min_amount_usdt',
  'settled_amount_usdt',
  'pix_key',
  'pix_key_type',
  'receiver_wallet',
  'pix_copy_paste',
  'blockchain_network',
  'blockchain_chain_id',
  'blockchain_tx_id',
  'block_explorer_url',
  'created_at',
  'updated_at',
].sort();

export async function countPayouts(db: Db, partnerId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM payouts WHERE partner_id = $1',
    [partnerId],
  );
  return rows[0]!.n;
}

/**
 * Raw bytes to the api over TCP, for requests no HTTP client will send. Resolves with everything the
 * server sent once it closes the connection, so the bytes must end it (Connection: close, or a head
 * it refuses). The client does not half-close first: the server takes a client's end as the end of
 * the exchange and drops an answer still in the making. Fails if the server neither answers nor
 * closes within `timeoutMs` (a safety net: a server that hangs on bytes is a failure too).
 */
export function rawRequest(baseUrl: string, bytes: string | Buffer, timeoutMs = 10_000): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    const received = () => Buffer.concat(chunks).toString('latin1');
    socket.setTimeout(timeoutMs, () => {
      socket.destroy();
      reject(
        new Error(
          `the api neither answered nor closed in ${timeoutMs} ms; it sent ${JSON.stringify(received())}`,
        ),
      );
    });
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(received()));
    socket.write(bytes);
  });
}

/** Status and JSON body of each HTTP/1.1 answer on a raw connection, in order. */
export function parseRawResponses(raw: string): { status: number; text: string; json: unknown }[] {
  const responses: { status: number; text: string; json: unknown }[] = [];
  let rest = raw;
  while (rest !== '') {
    const match = /^HTTP\/1\.1 (\d{3})[^\r]*\r\n([\s\S]*?)\r\n\r\n/.exec(rest);
    if (!match) throw new Error(`not an HTTP response: ${JSON.stringify(rest.slice(0, 200))}`);
    const length = /^content-length:\s*(\d+)/im.exec(match[2]!);
    const end = match[0].length + (length ? Number(length[1]) : 0);
    const text = rest.slice(match[0].length, end);
    responses.push({ status: Number(match[1]), text, json: parseJson(text) });
    rest = rest.slice(end);
  }
  return responses;
}

/** The first answer on a raw connection (see parseRawResponses). */
export function parseRawResponse(raw: string): { status: number; text: string; json: unknown } {
  const [first] = parseRawResponses(raw);
  if (!first) throw new Error('no HTTP response: the api closed the connection without answering');
  return first;
}
