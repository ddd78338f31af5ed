/**
 * The proof of PIX_PROVIDER=bcb-api-pix: `PIX_PROVIDER=bcb-api-pix SETTLEMENT_MODE=treasury npm start`
 * (the real launcher, on free ports and a data folder of its own) serves every partner-facing behaviour:
 * create, read, idempotency, QR, list, cancel, expiry and callbacks, with the BRL collected through the
 * sandbox's API Pix face over mutual TLS and the USDT sent by the treasury. Nothing is mocked.
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';

import { freePort } from '../../dev/local/infra/ports';
import { parseBrCode } from '../../src/domain/brcode';
import { launch, launcherEnv, type Launch } from '../support/launcher';
import { compiledEntry } from '../support/compiled';
import { until } from '../support/until';

const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);
const CAP_MS = 240_000;

interface Callback {
  headers: http.IncomingHttpHeaders;
  body: string;
}

let env: NodeJS.ProcessEnv;
let data: string;
let apiUrl: string;
let stack: Launch;
let apiKey: string;
let partnerId: string;
const callbacks: Callback[] = [];
let callbackServer: http.Server;
let callbackUrl: string;

/** The admin CLI against the launched stack's database, with its payload key. */
async function admin(args: string[], extra: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, [await compiledEntry('src/main/admin.ts'), ...args], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATABASE_URL: `postgres://postgres:password@127.0.0.1:${env.LOCAL_POSTGRES_PORT}/payouts`,
      PAYLOAD_ENCRYPTION_KEY: readFileSync(
        path.join(env.LOCAL_DATA_DIR!, 'payload-encryption-key'),
        'utf8',
      ).trim(),
      CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
      ...extra,
    },
    timeout: 60_000,
  });
  return JSON.parse(stdout) as Record<string, unknown>;
}

const partnerApi = (method: string, route: string, body?: unknown, headers: Record<string, string> = {}) =>
  fetch(`${apiUrl}${route}`, {
    method,
    headers: {
      'x-api-key': apiKey,
      ...(body !== undefined && { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

const payoutBody = {
  amount_brl: 100.0,
  receiver_wallet: '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
  pix_key: '12345678901',
  pix_key_type: 'CPF',
};

beforeAll(async () => {
  callbackServer = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      callbacks.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(200).end();
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => callbackServer.listen(port, '127.0.0.1', resolve));
  callbackUrl = `http://127.0.0.1:${port}/callbacks`;

  ({ env, data, apiUrl } = await launcherEnv({
    PIX_PROVIDER: 'bcb-api-pix',
    SETTLEMENT_MODE: 'treasury',
    PIX_CHARGE_EXPIRY_SECONDS: '60',
    CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
  }));
  stack = launch(env);
  await stack.waitFor(/"ready \(launcher pid/);
  ({ api_key: apiKey, partner_id: partnerId } = JSON.parse(
    readFileSync(path.join(env.LOCAL_DATA_DIR!, 'demo-partner.json'), 'utf8'),
  ) as { api_key: string; partner_id: string });
}, CAP_MS);

afterAll(async () => {
  if (stack && stack.proc.exitCode === null) stack.proc.kill('SIGTERM');
  await stack?.exited;
  await new Promise((resolve) => callbackServer?.close(resolve));
  rmSync(data, { recursive: true, force: true });
});

describe('PIX_PROVIDER=bcb-api-pix SETTLEMENT_MODE=treasury npm start', () => {
  let secret: string;

  it(
    'has registered its webhook at the institution, as `admin pix webhook show` reads it',
    async () => {
      await stack.waitFor(/webhook .*\/webhooks\/sandbox\/pix registered/);
      // The worker said at start that the institution answers, where its webhook points, and how long
      // its client certificate lasts.
      await stack.waitFor(/API Pix institution answers; webhook registered/);
      await stack.waitFor(/"daysLeft":\d+.*API Pix client certificate"/);
      const certDir = path.join(env.LOCAL_DATA_DIR!, 'sandbox-api-pix');
      const shown = await admin(['pix', 'webhook', 'show'], {
        PIX_PROVIDER: 'bcb-api-pix',
        PIX_API_URL: `https://127.0.0.1:${env.SANDBOX_API_PIX_PORT}/api/v2`,
        PIX_API_CLIENT_ID: 'payout-service',
        PIX_API_CLIENT_SECRET: 'sandbox-api-pix-secret',
        PIX_API_CERT_FILE: path.join(certDir, 'client.pem'),
        PIX_API_KEY_FILE: path.join(certDir, 'client-key.pem'),
        PIX_API_CA_FILE: path.join(certDir, 'ca.pem'),
        PIX_API_RECEIVER_KEY: '5f2b9c1e-8d4a-4c3b-9a6e-2f1d0c7b8a90',
      });
      expect(shown.webhook_url).toBe(`${apiUrl}/webhooks/sandbox`);
      secret = (await admin(['partner', 'set-callback', '--id', partnerId, '--url', callbackUrl]))
        .callback_secret as string;
      expect(secret).toMatch(/^whsec_/);
    },
    CAP_MS,
  );

  /** The expiry case, started before the demo runs: its minute to expiry passes meanwhile. */
  async function unpaidCharge(): Promise<void> {
    const key = `api-pix-${Date.now()}`;
    const first = await partnerApi('POST', '/v1/payouts', payoutBody, { 'idempotency-key': key });
    expect(first.status).toBe(201);
    const payout = (await first.json()) as { id: string; status: string; pix_copy_paste: string };
    expect(payout.status).toBe('PENDING');
    const code = parseBrCode(payout.pix_copy_paste);
    // A location the payer's bank fetches the charge from, and no key: the amount cannot change.
    expect(code.merchantAccount.url).toMatch(/^[\w.-]+\/qr\/v2\/\w+$/);
    expect(code.merchantAccount.key).toBeUndefined();
    expect(code.transactionAmount).toBe('100.00');

    const replay = await partnerApi('POST', '/v1/payouts', payoutBody, { 'idempotency-key': key });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(((await replay.json()) as { id: string }).id).toBe(payout.id);
    expect((await partnerApi('GET', `/v1/payouts/${payout.id}`)).status).toBe(200);

    const failed = await until(
      'the unpaid payout FAILED at expiry',
      async () => {
        const read = (await (await partnerApi('GET', `/v1/payouts/${payout.id}`)).json()) as {
          status: string;
        };
        return read.status === 'FAILED' ? read : undefined;
      },
      { timeoutMs: 150_000, intervalMs: 1_000 },
    );
    expect(failed.status).toBe('FAILED');
    // The payer's bank now refuses the expired (and removed) charge.
    const late = await fetch(`http://127.0.0.1:${env.SANDBOX_PORT}/sandbox/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pix_copy_paste: payout.pix_copy_paste }),
    });
    expect(late.status).toBe(410);
  }

  describe('with an unpaid charge waiting for its expiry meanwhile', () => {
    let unpaidCase: Promise<void>;
    beforeAll(() => {
      unpaidCase = unpaidCharge();
      // Awaited in its own test; until then a failure must not count as unhandled.
      unpaidCase.catch(() => {});
    });

    it(
      'runs the demo: quote, create, QR, payment to COMPLETED by the treasury, list, cancel',
      async () => {
        const { stdout } = await run(path.join(ROOT, 'node_modules/.bin/tsx'), ['dev/demo.ts'], {
          cwd: ROOT,
          env: {
            PATH: process.env.PATH,
            HOME: process.env.HOME,
            DEMO_API_URL: apiUrl,
            DEMO_SANDBOX_URL: `http://127.0.0.1:${env.SANDBOX_PORT}`,
            DEMO_API_KEY: apiKey,
            DEMO_TIMEOUT_SECONDS: '90',
          },
          timeout: 150_000,
        });
        const text = stdout.replace(/\x1b\[[0-9;]*m/g, ''); // eslint-disable-line no-control-regex
        expect(text).toMatch(/qr\.png \(or qr\.svg\): \d+ bytes/);
        expect(text).toMatch(/Done: USDT settled/);
        const completed = /payout ([0-9a-f-]{36}): PENDING/.exec(text)![1]!;
        expect(text).toMatch(new RegExp(`${completed}\\s+COMPLETED\\s+100\\.00 BRL`));
        const cancelled = /payout ([0-9a-f-]{36}): FAILED; its PIX charge was removed/.exec(text)![1]!;
        expect(text).toMatch(new RegExp(`${cancelled}\\s+FAILED\\s+100\\.00 BRL`));

        // Each end reached the partner as a signed callback (Standard Webhooks).
        const verified = await until('both callbacks', () => {
          const events = callbacks.map(
            (c) =>
              new Webhook(secret).verify(c.body, c.headers as Record<string, string>) as {
                event: string;
                payout: { id: string };
              },
          );
          const byId = (id: string) => events.find((e) => e.payout.id === id)?.event;
          return byId(completed) && byId(cancelled) ? [byId(completed), byId(cancelled)] : undefined;
        });
        expect(verified).toEqual(['payout.completed', 'payout.failed']);
      },
      CAP_MS,
    );

    it(
      'answers a dynamic BR Code, replays an Idempotency-Key, and fails an unpaid charge at expiry',
      async () => {
        await unpaidCase;
      },
      CAP_MS,
    );
  });
});
