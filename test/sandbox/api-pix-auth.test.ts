/**
 * The API Pix face's gates, over real HTTPS: mutual TLS (refused in the handshake without the CA's
 * client certificate), the certificate files, OAuth2 client credentials with expiry, and faults.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadOrCreateApiPixTls } from '../../dev/sandbox/api-pix/certificates';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  cobBody,
  httpsCall,
  newTxid,
  startApiPixSandbox,
  type ApiPixSandbox,
} from './api-pix-support';

let sandbox: ApiPixSandbox;
let certDir: string;

beforeAll(async () => {
  certDir = mkdtempSync(join(tmpdir(), 'api-pix-auth-'));
  sandbox = await startApiPixSandbox({ certDir, env: { SANDBOX_API_PIX_TOKEN_TTL_SECONDS: '1' } });
});

afterAll(async () => {
  await sandbox?.close();
  rmSync(certDir, { recursive: true, force: true });
});

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

describe('mutual TLS', () => {
  it('refuses a connection without a client certificate in the handshake', async () => {
    await expect(
      httpsCall(`${sandbox.origin}/oauth/token`, { ca: sandbox.client.ca }, { method: 'POST' }),
    ).rejects.toThrow(/certificate required|socket hang up|ECONNRESET/);
  });

  it('refuses a client certificate from another CA', async () => {
    const otherDir = mkdtempSync(join(tmpdir(), 'api-pix-other-'));
    try {
      const other = loadOrCreateApiPixTls(otherDir, ['127.0.0.1']);
      await expect(
        httpsCall(
          `${sandbox.origin}/oauth/token`,
          { ca: sandbox.client.ca, cert: other.clientCert, key: other.clientKey },
          { method: 'POST' },
        ),
      ).rejects.toThrow(/unknown ca|certificate|socket hang up|ECONNRESET/i);
    } finally {
      rmSync(otherDir, { recursive: true, force: true });
    }
  });

  it('serves a certificate for 127.0.0.1 and localhost signed by ca.pem', async () => {
    const viaName = await httpsCall(
      `${sandbox.origin.replace('127.0.0.1', 'localhost')}/api/v2/cob/x`,
      sandbox.client,
    );
    expect(viaName.status).toBe(401);
  });

  it('writes ca.pem, client.pem, client-key.pem (keys 0600) and reuses them on restart', async () => {
    for (const file of ['ca-key.pem', 'server-key.pem', 'client-key.pem'])
      expect((statSync(join(certDir, file)).mode & 0o777).toString(8)).toBe('600');
    const before = ['ca.pem', 'client.pem', 'client-key.pem', 'server.pem'].map((f) =>
      readFileSync(join(certDir, f), 'utf8'),
    );
    const again = loadOrCreateApiPixTls(certDir, ['127.0.0.1', 'localhost']);
    expect(again.created).toEqual([]);
    expect([again.ca, again.clientCert, again.clientKey, again.serverCert]).toEqual(before);
    // A new name makes a new server certificate only: the service's CA and client files still hold.
    const named = loadOrCreateApiPixTls(certDir, ['127.0.0.1', 'localhost', 'sandbox']);
    expect(named.created).toEqual(['server.pem']);
    expect([named.ca, named.clientCert]).toEqual([before[0], before[1]]);
  });
});

describe('OAuth2 client credentials', () => {
  const tokenCall = (headers: Record<string, string>, body: string) =>
    httpsCall(`${sandbox.origin}/oauth/token`, sandbox.client, { method: 'POST', headers, body });

  it('gives a bearer token for the right client, by form or JSON', async () => {
    const form = await tokenCall(
      { authorization: basic(CLIENT_ID, CLIENT_SECRET), 'content-type': 'application/x-www-form-urlencoded' },
      'grant_type=client_credentials',
    );
    expect(form.status).toBe(200);
    expect(form.json).toEqual({
      access_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      token_type: 'Bearer',
      expires_in: 1,
      scope: expect.stringContaining('cob.write'),
    });
    const json = await tokenCall(
      { authorization: basic(CLIENT_ID, CLIENT_SECRET), 'content-type': 'application/json' },
      JSON.stringify({ grant_type: 'client_credentials' }),
    );
    expect(json.status).toBe(200);
  });

  it('refuses a wrong secret (401) and another grant (400)', async () => {
    const wrong = await tokenCall(
      { authorization: basic(CLIENT_ID, 'nope'), 'content-type': 'application/x-www-form-urlencoded' },
      'grant_type=client_credentials',
    );
    expect(wrong).toMatchObject({ status: 401, json: { error: 'invalid_client' } });
    const grant = await tokenCall(
      { authorization: basic(CLIENT_ID, CLIENT_SECRET), 'content-type': 'application/x-www-form-urlencoded' },
      'grant_type=password',
    );
    expect(grant).toMatchObject({ status: 400, json: { error: 'unsupported_grant_type' } });
  });

  it('answers 401 problem+json without a token, with an unknown one, and once it expired', async () => {
    const txid = newTxid();
    for (const token of ['', 'not-a-token']) {
      const res = await sandbox.api('PUT', `/cob/${txid}`, cobBody('1.00'), token);
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json).toMatchObject({
        type: 'https://pix.bcb.gov.br/api/v2/error/AcessoNegado',
        status: 401,
      });
    }
    const token = await sandbox.token();
    expect((await sandbox.api('GET', `/cob/${txid}`, undefined, token)).status).toBe(404);
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await sandbox.api('GET', `/cob/${txid}`, undefined, token)).status).toBe(401);
    // Nothing was created by the refused calls.
    expect((await sandbox.api('GET', `/cob/${txid}`)).status).toBe(404);
  });
});

describe('faults', () => {
  it('answers an armed API Pix route with its status, then serves it again', async () => {
    const txid = newTxid();
    const armed = await sandbox.plainCall('POST', '/sandbox/faults', {
      route: 'PUT /cob/{txid}',
      status: 503,
      count: 2,
    });
    expect(armed.status).toBe(201);
    expect((await sandbox.plainCall('GET', '/sandbox/faults')).json).toEqual({
      faults: [{ route: 'PUT /cob/{txid}', status: 503, remaining: 2 }],
    });
    for (let i = 0; i < 2; i += 1) {
      const res = await sandbox.api('PUT', `/cob/${txid}`, cobBody('2.00'));
      expect(res).toMatchObject({
        status: 503,
        json: { status: 503, type: expect.stringMatching(/ServicoIndisponivel$/) },
      });
    }
    expect((await sandbox.api('GET', `/cob/${txid}`)).status).toBe(404);
    expect((await sandbox.api('PUT', `/cob/${txid}`, cobBody('2.00'))).status).toBe(201);
  });

  it('fails the token endpoint and the reads too (401, 429, 500)', async () => {
    await sandbox.plainCall('POST', '/sandbox/faults', { route: 'POST /oauth/token', status: 401, count: 1 });
    await expect(sandbox.token()).rejects.toThrow('token: HTTP 401');
    // Each call below takes a fresh token: this file's tokens live 1 s.
    const txid = newTxid();
    expect((await sandbox.api('PUT', `/cob/${txid}`, cobBody('3.00'))).status).toBe(201);
    await sandbox.plainCall('POST', '/sandbox/faults', { route: 'GET /cob/{txid}', status: 429, count: 1 });
    await sandbox.plainCall('POST', '/sandbox/faults', { route: 'PATCH /cob/{txid}', status: 500, count: 1 });
    await sandbox.plainCall('POST', '/sandbox/faults', { route: 'GET /pix/{e2eid}', status: 502, count: 1 });
    expect((await sandbox.api('GET', `/cob/${txid}`, undefined)).status).toBe(429);
    expect((await sandbox.api('GET', `/cob/${txid}`, undefined)).status).toBe(200);
    const patch = { status: 'REMOVIDA_PELO_USUARIO_RECEBEDOR' };
    expect((await sandbox.api('PATCH', `/cob/${txid}`, patch)).status).toBe(500);
    expect((await sandbox.api('GET', `/cob/${txid}`, undefined)).json).toMatchObject({
      status: 'ATIVA',
    });
    expect((await sandbox.api('GET', `/pix/E99999999202611252000abcdefghijk`, undefined)).status).toBe(502);
    expect((await sandbox.api('GET', `/pix/E99999999202611252000abcdefghijk`, undefined)).status).toBe(404);
  });

  it('refuses an unknown route name and clears all faults', async () => {
    expect(
      (
        await sandbox.plainCall('POST', '/sandbox/faults', {
          route: 'GET /cobv/{txid}',
          status: 500,
          count: 1,
        })
      ).status,
    ).toBe(400);
    await sandbox.plainCall('POST', '/sandbox/faults', {
      route: 'GET /webhook/{chave}',
      status: 500,
      count: 5,
    });
    await sandbox.plainCall('POST', '/sandbox/faults', { route: 'GET /fx/quote', status: 500, count: 5 });
    expect((await sandbox.plainCall('DELETE', '/sandbox/faults')).json).toEqual({ cleared: 2 });
  });
});
