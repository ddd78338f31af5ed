import { generateCallbackSecret } from '../../src/adapters/callbacks/signature';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { verifyCallback } from '../../examples/verify-callback-signature';
import { sendCallback, type CallbackSenderOptions } from '../../src/adapters/callbacks/http-sender';
import { until } from '../support/until';
import { startReceiver, type Receiver } from './receiver';

// The sender against a real HTTP server on loopback; loopback is allowed explicitly here, as a
// receiver on the operator's own host is refused by default.
describe('callback HTTP sender', () => {
  const allowLoopback: CallbackSenderOptions = {
    timeoutMs: 2_000,
    requireHttps: false,
    allowPrivateNetworks: true,
  };
  const secret = generateCallbackSecret();
  const body = JSON.stringify({ event: 'payout.completed', payout: { id: 'p-1', status: 'COMPLETED' } });
  let receiver: Receiver;

  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(() => receiver.close());

  const send = (opts: Partial<CallbackSenderOptions> = {}, url = receiver.url) =>
    sendCallback({ url, secret, eventId: 'evt_p-1_completed', body }, { ...allowLoopback, ...opts });

  it('POSTs the body byte for byte, signed, with the event id; a 2xx is delivered', async () => {
    receiver.respond = () => 204;
    const result = await send();
    expect(result).toMatchObject({ delivered: true, statusCode: 204 });
    const [got] = receiver.received;
    expect(got!.path).toBe('/callbacks');
    expect(got!.rawBody.toString('utf8')).toBe(body);
    expect(got!.headers['content-type']).toBe('application/json');
    expect(got!.headers['webhook-id']).toBe('evt_p-1_completed');
    const check = verifyCallback({ rawBody: got!.rawBody, headers: got!.headers, secret });
    expect(check.valid).toBe(true);
  });

  it('reports a non-2xx answer with its status and the start of its body', async () => {
    receiver.respond = () => 503;
    expect(await send()).toMatchObject({
      delivered: false,
      statusCode: 503,
      responseExcerpt: 'receiver says 503',
    });
  });

  it('does not follow redirects: the guard vetted only the first host', async () => {
    const target = await startReceiver();
    const redirecting = http.createServer((_req, res) => res.writeHead(307, { location: target.url }).end());
    await new Promise<void>((r) => redirecting.listen(0, '127.0.0.1', r));
    try {
      const port = (redirecting.address() as AddressInfo).port;
      expect(await send({}, `http://127.0.0.1:${port}/cb`)).toMatchObject({
        delivered: false,
        statusCode: 307,
      });
      expect(target.received).toHaveLength(0);
    } finally {
      redirecting.close();
      await target.close();
    }
  });

  it('gives up on a receiver that does not answer within the timeout', async () => {
    receiver.respond = () => 'hang';
    const result = await send({ timeoutMs: 300 });
    expect(result).toMatchObject({ delivered: false, error: 'timed out after 300 ms' });
    // It hung up itself: the receiver, which never answers, sees the connection closed.
    await until('the sender to hang up', () => (receiver.abandoned === 1 ? true : undefined));
  });

  it('reports a refused connection', async () => {
    const closed = await startReceiver();
    await closed.close();
    const result = await send({}, closed.url);
    expect(result.delivered).toBe(false);
    expect(result.error).toMatch(/ECONNREFUSED/);
  });

  it('refuses loopback unless allowed, and http in production, without sending anything', async () => {
    expect(await send({ allowPrivateNetworks: false })).toMatchObject({
      delivered: false,
      error: 'refused: callback URL must resolve to a public address',
      errorDetail: expect.stringMatching(/loopback address/),
    });
    expect(await send({ requireHttps: true })).toMatchObject({
      delivered: false,
      error: expect.stringMatching(/^refused: .*https in production/),
    });
    expect(receiver.received).toHaveLength(0);
  });

  it('connects only to the vetted addresses (no second DNS lookup) and keeps the Host name', async () => {
    const port = new URL(receiver.url).port;
    // A name no DNS server knows: reaching the receiver proves the pinned address was used.
    const result = await send(
      { resolve: async () => [{ address: '127.0.0.1', family: 4 }] },
      `http://callbacks.partner.test:${port}/callbacks`,
    );
    expect(result).toMatchObject({ delivered: true, statusCode: 200 });
    expect(receiver.received[0]!.headers.host).toBe(`callbacks.partner.test:${port}`);
  });

  it('refuses a name whose resolution includes a private address, at send time', async () => {
    const result = await send(
      { allowPrivateNetworks: false, resolve: async () => [{ address: '10.1.2.3', family: 4 }] },
      'https://hooks.partner.example/cb',
    );
    // The error (the partner's delivery log, the test event's answer) names no address; the
    // detail, for the operator's log, does.
    expect(result).toMatchObject({
      delivered: false,
      error: 'refused: callback URL must resolve to a public address',
      errorDetail: expect.stringMatching(/private address, 10\.1\.2\.3/),
    });
  });

  it('verifies the TLS certificate against the URL host name, sent as SNI, over the pinned address', async () => {
    // A self-signed certificate for callbacks.partner.test (test/callbacks/fixtures, test use only).
    const fixture = (name: string) => readFileSync(path.join(__dirname, 'fixtures', name));
    const context = tls.createSecureContext({
      key: fixture('self-signed-key.pem'),
      cert: fixture('self-signed-cert.pem'),
    });
    const sniNames: string[] = [];
    let requests = 0;
    const server = https.createServer(
      {
        SNICallback: (name, cb) => {
          sniNames.push(name);
          cb(null, context);
        },
      },
      (_req, res) => {
        requests += 1;
        res.writeHead(200).end();
      },
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      const result = await send(
        { resolve: async () => [{ address: '127.0.0.1', family: 4 }] },
        `https://callbacks.partner.test:${port}/cb`,
      );
      expect(result.delivered).toBe(false);
      expect(result.error).toMatch(/self[- ]signed/i);
      expect(sniNames).toEqual(['callbacks.partner.test']);
      expect(requests).toBe(0);
    } finally {
      server.close();
    }
  });
});
