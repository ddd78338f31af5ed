import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { FastifyInstance } from 'fastify';
import pino from 'pino';

import { createApiPixFace, type ApiPixFace, type ApiPixFaceDeps } from '../../dev/sandbox/api-pix/face';
import { buildSandboxApp } from '../../dev/sandbox/app';
import { loadSandboxConfig } from '../../dev/sandbox/config';
import { SandboxState } from '../../dev/sandbox/state';
import { freePort } from '../../dev/local/infra/ports';
import { parseJson } from '../support/http';
import { apiPixProviderOf } from '../../src/main/wiring';

export const PIX_KEY = 'ab12cd34-5678-4ef0-9abc-def012345678';
export const CLIENT_ID = 'test-client';
export const CLIENT_SECRET = 'test-secret-123';

export interface ClientCredentials {
  ca: string;
  cert?: string;
  key?: string;
}

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  json: unknown;
}

/** One HTTPS request with Node's own client: `tls` is what the client presents and trusts. */
export function httpsCall(
  url: string,
  tls: ClientCredentials,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      {
        method: init.method ?? 'GET',
        headers: init.headers,
        ca: tls.ca,
        cert: tls.cert,
        key: tls.key,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            json: parseJson(Buffer.concat(chunks).toString()),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

export interface ApiPixSandbox {
  /** The plain face (payer, controls), http. */
  plainUrl: string;
  /** https://127.0.0.1:PORT */
  origin: string;
  /** origin + /api/v2 */
  apiUrl: string;
  certDir: string;
  /** The service's credentials as read from the cert dir's files. */
  client: Required<ClientCredentials>;
  face: ApiPixFace;
  plain: FastifyInstance;
  /** A token from POST /oauth/token. */
  token(): Promise<string>;
  /** An API call with the client certificate and `token` (default: a fresh one). */
  api(method: string, path: string, body?: unknown, token?: string): Promise<Answer>;
  /** A call to the plain face. */
  plainCall(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }>;
  close(): Promise<void>;
}

/**
 * Both faces of the sandbox in this process, one state, on free loopback ports. `certDir` and
 * `stateFile` let a test restart it on the same files.
 */
export async function startApiPixSandbox(
  opts: { env?: Record<string, string>; deps?: ApiPixFaceDeps; certDir?: string; stateFile?: string } = {},
): Promise<ApiPixSandbox> {
  const certDir = opts.certDir ?? mkdtempSync(join(tmpdir(), 'api-pix-certs-'));
  const [plainPort, apiPort] = [await freePort(), await freePort()];
  const config = loadSandboxConfig({
    SANDBOX_PORT: String(plainPort),
    SANDBOX_PIX_KEY: PIX_KEY,
    SANDBOX_LOG_LEVEL: process.env.TEST_LOG ? 'debug' : 'silent',
    SANDBOX_API_PIX_PORT: String(apiPort),
    SANDBOX_API_PIX_CERT_DIR: certDir,
    SANDBOX_API_PIX_CLIENT_ID: CLIENT_ID,
    SANDBOX_API_PIX_CLIENT_SECRET: CLIENT_SECRET,
    ...(opts.stateFile !== undefined && { SANDBOX_STATE_FILE: opts.stateFile }),
    ...opts.env,
  });
  if (!config.apiPix) throw new Error('API Pix face not configured');
  const logger = pino({ level: config.logLevel });
  const state = config.stateFile === undefined ? new SandboxState() : SandboxState.load(config.stateFile);
  const face = createApiPixFace({ ...config, apiPix: config.apiPix }, state, logger, {
    webhook: { initialDelayMs: 100, maxDelayMs: 1_000 },
    batchMs: 150,
    devolucaoDelayMs: 200,
    ...opts.deps,
  });
  const plain = buildSandboxApp(config, { logger, state, apiPix: face });
  await plain.listen({ host: '127.0.0.1', port: plainPort });
  await face.app.listen({ host: '127.0.0.1', port: apiPort });

  const client = {
    ca: readFileSync(join(certDir, 'ca.pem'), 'utf8'),
    cert: readFileSync(join(certDir, 'client.pem'), 'utf8'),
    key: readFileSync(join(certDir, 'client-key.pem'), 'utf8'),
  };
  const origin = `https://127.0.0.1:${apiPort}`;
  const token = async () => {
    const res = await httpsCall(`${origin}/oauth/token`, client, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    if (res.status !== 200) throw new Error(`token: HTTP ${res.status}`);
    return (res.json as { access_token: string }).access_token;
  };
  const plainUrl = `http://127.0.0.1:${plainPort}`;
  return {
    plainUrl,
    origin,
    apiUrl: `${origin}/api/v2`,
    certDir,
    client,
    face,
    plain,
    token,
    async api(method, path, body, given) {
      const bearer = given ?? (await token());
      return httpsCall(`${origin}/api/v2${path}`, client, {
        method,
        headers: {
          authorization: `Bearer ${bearer}`,
          ...(body !== undefined && { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    },
    async plainCall(method, path, body) {
      const res = await fetch(`${plainUrl}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, json: parseJson(await res.text()) };
    },
    async close() {
      await face.app.close();
      await plain.close();
      if (opts.certDir === undefined) rmSync(certDir, { recursive: true, force: true });
    },
  };
}

/** A cob body for the sandbox's key. */
export const cobBody = (original: string, extra: Record<string, unknown> = {}) => ({
  calendario: { expiracao: 3600 },
  valor: { original },
  chave: PIX_KEY,
  solicitacaoPagador: 'Pagamento de teste',
  ...extra,
});

let txidCounter = 0;
/** A fresh 30-character txid. */
export const newTxid = () => `tx${Date.now().toString(36)}${(txidCounter++).toString(36)}`.padEnd(30, '0');

export interface PixReceiver {
  /** The URL to register (the sandbox appends /pix). */
  url: string;
  /** Every POST body received (answered 2xx or not), in order, with its path. */
  posts: { path: string; status: number; body: { pix: Record<string, unknown>[] } }[];
  failNext(n: number): void;
  close(): Promise<void>;
}

/** The service's webhook endpoint as the API Pix face sees it: a real HTTP server on loopback. */
export async function startPixReceiver(): Promise<PixReceiver> {
  const posts: PixReceiver['posts'] = [];
  let failures = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const status = failures > 0 ? 500 : 200;
      if (failures > 0) failures -= 1;
      posts.push({
        path: req.url ?? '',
        status,
        body: JSON.parse(Buffer.concat(chunks).toString()) as never,
      });
      res.writeHead(status).end();
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}/hooks/api-pix`,
    posts,
    failNext(n) {
      failures = n;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The service's API Pix client (src/main/wiring.ts, as the worker builds it) pointed at this sandbox's
 * face with the certificates it made; `secret` other than the sandbox's client secret to test a refusal.
 */
export function serviceClientOf(sandbox: ApiPixSandbox, secret = CLIENT_SECRET) {
  return apiPixProviderOf({
    PIX_API_URL: sandbox.apiUrl,
    PIX_API_TOKEN_URL: `${sandbox.origin}/oauth/token`,
    PIX_API_CLIENT_ID: CLIENT_ID,
    PIX_API_CLIENT_SECRET: secret,
    PIX_API_SCOPES: undefined,
    PIX_API_CERT_FILE: join(sandbox.certDir, 'client.pem'),
    PIX_API_KEY_FILE: join(sandbox.certDir, 'client-key.pem'),
    PIX_API_CA_FILE: join(sandbox.certDir, 'ca.pem'),
    PIX_API_RECEIVER_KEY: PIX_KEY,
    PIX_API_PAYER_MESSAGE: 'Pagamento de teste',
    PROVIDER_TIMEOUT_MS: 5_000,
  });
}
