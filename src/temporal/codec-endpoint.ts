import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Payload, PayloadCodec } from '@temporalio/common';
import type { Logger } from '../observability/logger';
import type { OpsHandler } from '../observability/ops-server';
import { createCodecAuth, type CodecOidc } from './codec-auth';

/**
 * The remote codec endpoint of the Temporal Web UI and CLI (`POST <base>/encode`, `POST
 * <base>/decode`, bodies `{"payloads": [{"metadata": {k: base64}, "data": base64}]}`), so an
 * operator who may read payouts sees decrypted inputs instead of ciphertext. Whoever can reach it
 * and holds encrypted payloads can read them: it is served on the ops port only, and wants one of
 * what codec-auth.ts accepts: CODEC_AUTH_TOKEN as a bearer token (CLI: `--codec-auth`), an OIDC
 * access token the Web UI passes on, or the session cookie of a browser signed in at `/codec/login`.
 *
 * The Web UI calls it from the operator's browser, cross-origin, hence CORS for the UI's origins,
 * with credentials (the session cookie).
 */

export const CODEC_BASE_PATH = '/codec';
const MAX_BODY_BYTES = 8 * 1024 * 1024; // a few payloads at Temporal's 2 MiB limit each

export interface CodecEndpointOptions {
  codec: PayloadCodec;
  /** When set, encode/decode want it as a bearer token, or a browser session signed in with it. */
  authToken?: string;
  /** When set, encode/decode also take a Web UI user's OIDC access token (codec-auth.ts). */
  oidc?: CodecOidc;
  /** Production: refuse to exist without authToken or oidc (whoever reaches the endpoint could decrypt). */
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
  if (opts.requireAuthToken && !opts.authToken && !opts.oidc) {
    // A network rule alone is one misconfigured firewall away from handing out every PIX key and
    // wallet in the workflow histories; production wants the bearer token as well.
    throw new CodecEndpointConfigError(
      'CODEC_AUTH_TOKEN is required when NODE_ENV=production: the codec endpoint decrypts payout payloads ' +
        'for whoever calls it (set CODEC_AUTH_TOKEN to a secret of at least 16 characters)',
    );
  }
  const auth = createCodecAuth({
    ...(opts.authToken ? { token: opts.authToken } : {}),
    ...(opts.oidc ? { oidc: opts.oidc } : {}),
  });
  const origins = new Set(opts.corsOrigins);

  return async (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === `${CODEC_BASE_PATH}/login` && auth.sessions) {
      await login(req, res, auth);
      return true;
    }
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
    const verdict = await auth.check(req);
    if (!verdict.ok) {
      opts.logger.warn({ operation, reason: verdict.reason }, 'codec request refused');
      sendJson(res, 401, {
        error:
          'codec endpoint wants Authorization: Bearer <CODEC_AUTH_TOKEN>, an allowed OIDC access token, ' +
          `or a browser signed in at ${CODEC_BASE_PATH}/login`,
      });
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

const LOGIN_PAGE =
  '<!doctype html><meta charset="utf-8"><title>Payload codec</title>' +
  '<form method="post"><p>CODEC_AUTH_TOKEN: <input type="password" name="token" autofocus> ' +
  '<button>Sign in</button></p></form>' +
  '<p>The Temporal Web UI then decodes payloads in this browser (its codec setting ' +
  '"Include cross-origin credentials" must be on).</p>';

/**
 * The browser's sign-in: a form (GET) that posts the token (POST, never in a URL, which logs and
 * histories keep) and gets the session cookie back.
 */
async function login(req: IncomingMessage, res: ServerResponse, auth: ReturnType<typeof createCodecAuth>) {
  const html = (status: number, body: string, headers: Record<string, string> = {}) =>
    res
      .writeHead(status, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'content-security-policy': "default-src 'none'; form-action 'self'",
        'x-frame-options': 'DENY',
        ...headers,
      })
      .end(body);
  if (req.method === 'GET') return html(200, LOGIN_PAGE);
  if (req.method !== 'POST') return html(405, 'method not allowed', { allow: 'GET, POST' });
  let token: string;
  try {
    token = new URLSearchParams(await readBody(req)).get('token') ?? '';
  } catch {
    return html(400, 'invalid form');
  }
  const secure = req.headers['x-forwarded-proto'] === 'https' || 'encrypted' in req.socket;
  const cookie = auth.sessionCookie(token, secure);
  if (!cookie) return html(401, `${LOGIN_PAGE}<p>Wrong token.</p>`);
  return html(
    200,
    '<!doctype html><meta charset="utf-8"><p>Signed in: the Web UI now decodes payloads.</p>',
    {
      'set-cookie': cookie,
    },
  );
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
