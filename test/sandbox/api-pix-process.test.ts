/**
 * `npm run sandbox` with SANDBOX_API_PIX_PORT: both faces in one process over one state, as the
 * service will meet them: the certificate files it reads, the token, a cob paid on the plain face.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { freePort } from '../../dev/local/infra/ports';
import { ServiceProcess } from '../support/service-process';
import { cobBody, httpsCall, newTxid, PIX_KEY } from './api-pix-support';

test('main starts both faces on one state, and stops on SIGTERM', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'api-pix-process-'));
  const [plainPort, apiPort] = [await freePort(), await freePort()];
  const sandbox = new ServiceProcess('sandbox', 'dev/sandbox/main.ts', {
    SANDBOX_PORT: String(plainPort),
    SANDBOX_PIX_KEY: PIX_KEY,
    SANDBOX_API_PIX_PORT: String(apiPort),
    SANDBOX_API_PIX_CERT_DIR: dir,
    SANDBOX_API_PIX_CERT_NAMES: 'sandbox',
  });
  try {
    await sandbox.waitForLog('API Pix face ready (mutual TLS)', 60_000);
    const tls = {
      ca: readFileSync(join(dir, 'ca.pem'), 'utf8'),
      cert: readFileSync(join(dir, 'client.pem'), 'utf8'),
      key: readFileSync(join(dir, 'client-key.pem'), 'utf8'),
    };
    const origin = `https://localhost:${apiPort}`;
    const token = await httpsCall(`${origin}/oauth/token`, tls, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from('payout-service:sandbox-api-pix-secret').toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    expect(token.status).toBe(200);
    const auth = { authorization: `Bearer ${(token.json as { access_token: string }).access_token}` };
    const txid = newTxid();
    const created = await httpsCall(`${origin}/api/v2/cob/${txid}`, tls, {
      method: 'PUT',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(cobBody('15.00')),
    });
    expect(created.status).toBe(201);
    const paid = await fetch(`http://127.0.0.1:${plainPort}/sandbox/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pix_copy_paste: (created.json as { pixCopiaECola: string }).pixCopiaECola }),
    });
    expect(paid.status).toBe(202);
    const cob = await httpsCall(`${origin}/api/v2/cob/${txid}`, tls, { headers: auth });
    expect(cob.json).toMatchObject({ status: 'CONCLUIDA', pix: [{ valor: '15.00' }] });

    await sandbox.kill('SIGTERM');
    await sandbox.exited;
    expect(sandbox.errors()).toEqual([]);
  } finally {
    await sandbox.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});
