import { timingSafeEqual, createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Payload, PayloadCodec } from '@temporalio/common';
import type { Logger } from '../observability/logger';
import type { OpsHandler } from '../observability/ops-server';

/**
 * The remote codec endpoint of the Temporal Web UI and CLI (`POST <base>/encode`, `POST
 * <base>/decode`, bodies `{"payloads": [{"metadata": {k: base64}, "data": base64}]}`), so an
 * operator who may read payouts sees decrypted inputs instead of ciphertext. Whoever can reach it
 * and holds encrypted payloads can read them: it is served on the ops port only, and with
 * CODEC_AUTH_TOKEN set it also wants `Authorization: Bearer <token>` (CLI: `--codec-auth`).
 *
 * The Web UI calls it from the operator's browser, cross-origin, hence CORS for the UI's origins.
 */

export const CODEC_BASE_PATH = '/codec';
const MAX_BODY_BYTES = 8 * 1024 * 1024; // a few payloads at Temporal's 2 MiB limit each

export interface CodecEndpointOptions {
  codec: PayloadCodec;
  /** When set, every encode/decode request must carry it as a bearer token. */
  authToken?: string;
  /** Production: refuse to exist without authToken (whoever reaches the endpoint could decrypt). */
  requireAuthToken: boolean;
  /** Browser origins allowed to call it: the Temporal Web UI's. */
  corsOrigins: readonly string[];
  logger: Logger;
}

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

export class CodecEndpointConfigError extends Error {}

export function createCodecEndpoint(opts: CodecEndpointOptions): OpsHandler {
  if (opts.requireAuthToken && !opts.authToken) {
    // A network rule alone is one misconfigured firewall away from handing out every PIX key and
    // wallet in the workflow histories; production wants the bearer token as well.
    throw new CodecEndpointConfigError(
      'CODEC_AUTH_TOKEN is required when NODE_ENV=production: the codec endpoint decrypts payout payloads ' +
        'for whoever calls it (set CODEC_AUTH_TOKEN to a secret of at least 16 characters)',
    );
  }
  const expectedAuth = opts.authToken ? digest(`Bearer ${opts.authToken}`) : undefined;
  const origins = new Set(opts.corsOrigins);

  return async (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const operation =
      path === `${CODEC_BASE_PATH}/encode`
        ? 'encode'
        : path === `${CODEC_BASE_PATH}/decode`
          ? 'decode'
          : null;
    if (!operation) return false;

    const origin = req.headers.origin;
    if (origin && origins.has(origin)) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-allow-credentials', 'true');
      res.setHeader('vary', 'Origin');
    }
    if (req.method === 'OPTIONS') {
      // Preflights carry no credentials, so they are answered before the token check.
      res.setHeader('access-control-allow-methods', 'POST, OPTIONS');
      res.setHeader('access-control-allow-headers', 'content-type, x-namespace, authorization');
      res.setHeader('access-control-max-age', '600');
      res.writeHead(204).end();
      return true;
    }
    if (req.method !== 'POST') {
      sendJson(res, 405, { error: 'method not allowed' });
      return true;
    }
    if (expectedAuth && !timingSafeEqual(digest(req.headers.authorization ?? ''), expectedAuth)) {
      sendJson(res, 401, { error: 'codec endpoint wants Authorization: Bearer <CODEC_AUTH_TOKEN>' });
      return true;
    }

    let payloads: Payload[];
    try {
      payloads = fromJson(await readBody(req));
    } catch (err) {
      sendJson(res, 400, { error: err instanceof Error ? err.message : 'invalid body' });
      return true;
    }
    try {
      const out = await (operation === 'encode' ? opts.codec.encode(payloads) : opts.codec.decode(payloads));
      sendJson(res, 200, { payloads: out.map(toJson) });
    } catch (err) {
      // A payload under an unknown key, or tampered with: say so, never guess.
      opts.logger.warn(
        { operation, err: err instanceof Error ? err.message : String(err) },
        'codec request failed',
      );
      sendJson(res, 422, {
        error: `cannot ${operation} payloads: ${err instanceof Error ? err.message : 'error'}`,
      });
    }
    return true;
  };
}

function digest(text: string): Buffer {
  // Hashing first gives equal lengths, which timingSafeEqual requires, whatever the client sent.
  return createHash('sha256').update(text).digest();
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error('body too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function fromJson(body: string): Payload[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new Error('body must be JSON');
  }
  if (typeof parsed !== 'object' || parsed === null) throw new Error('body must be {"payloads": [...]}');
  // Protobuf JSON leaves out an empty list, so `{}` (which the Temporal CLI sends) means no payloads.
  const list = (parsed as { payloads?: unknown }).payloads ?? [];
  if (!Array.isArray(list)) throw new Error('body must be {"payloads": [...]}');
  return list.map((item: JsonPayload) => {
    if (typeof item !== 'object' || item === null) throw new Error('each payload must be an object');
    const metadata: Record<string, Uint8Array> = {};
    for (const [key, value] of Object.entries(item.metadata ?? {})) {
      if (typeof value !== 'string') throw new Error('payload metadata values must be base64 strings');
      metadata[key] = new Uint8Array(Buffer.from(value, 'base64'));
    }
    if (item.data !== undefined && typeof item.data !== 'string')
      throw new Error('payload data must be base64');
    return { metadata, data: new Uint8Array(Buffer.from(item.data ?? '', 'base64')) };
  });
}

function toJson(payload: Payload): JsonPayload {
  const metadata: Record<string, string> = {};
  for (const [key, value] of Object.entries(payload.metadata ?? {})) {
    if (value) metadata[key] = Buffer.from(value).toString('base64');
  }
  return { metadata, data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64') };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
