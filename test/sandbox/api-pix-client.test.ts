/**
 * What the service's API Pix client does beyond the provider contract (test/provider-contract): its
 * OAuth2 token on a 401 and a wrong secret, a txid that exists with another amount, against the
 * sandbox's API Pix face over mutual TLS. Nothing is mocked.
 */
import { randomUUID } from 'node:crypto';

import { apiPixProviderOf } from '../../src/main/wiring';
import { ProviderError } from '../../src/adapters/provider/types';
import { txidOfPayout } from '../../src/adapters/provider/api-pix/txid';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  PIX_KEY,
  cobBody,
  startApiPixSandbox,
  type ApiPixSandbox,
} from './api-pix-support';

let sandbox: ApiPixSandbox;
beforeAll(async () => {
  sandbox = await startApiPixSandbox();
});
afterAll(() => sandbox?.close());

const client = (secret = CLIENT_SECRET) =>
  apiPixProviderOf({
    PIX_API_URL: sandbox.apiUrl,
    PIX_API_TOKEN_URL: `${sandbox.origin}/oauth/token`,
    PIX_API_CLIENT_ID: CLIENT_ID,
    PIX_API_CLIENT_SECRET: secret,
    PIX_API_SCOPES: undefined,
    PIX_API_CERT_FILE: `${sandbox.certDir}/client.pem`,
    PIX_API_KEY_FILE: `${sandbox.certDir}/client-key.pem`,
    PIX_API_CA_FILE: `${sandbox.certDir}/ca.pem`,
    PIX_API_RECEIVER_KEY: PIX_KEY,
    PIX_API_PAYER_MESSAGE: 'Pagamento de teste',
    PROVIDER_TIMEOUT_MS: 5_000,
  });

const charge = (externalId = randomUUID(), amountCentavos = 5_000n) => ({
  externalId,
  amountCentavos,
  payerPixKey: '12345678901',
  payerPixKeyType: 'CPF',
  expiresInSeconds: 600,
});

async function rejection(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ProviderError) return err;
    throw err;
  }
  throw new Error('expected a ProviderError');
}

it('a call answered 401 fetches a new token once and is repeated', async () => {
  const pix = client();
  const created = await pix.createCharge(charge());
  await sandbox.plainCall('POST', '/sandbox/faults', { route: 'GET /cob/{txid}', status: 401, count: 1 });
  expect((await pix.getChargeStatus(created.chargeId)).status).toBe('active');
  // Twice in a row is not a stale token: the refusal stands, and is final.
  await sandbox.plainCall('POST', '/sandbox/faults', { route: 'GET /cob/{txid}', status: 401, count: 2 });
  const err = await rejection(pix.getChargeStatus(created.chargeId));
  expect({ code: err.code, retryable: err.retryable, status: err.httpStatus }).toEqual({
    code: 'unauthorized',
    retryable: false,
    status: 401,
  });
});

it('a wrong client secret is a final refusal whose message never carries the secret', async () => {
  const secret = 'wrong-secret-7f3a9c';
  const err = await rejection(client(secret).createCharge(charge()));
  expect({ code: err.code, retryable: err.retryable }).toEqual({ code: 'unauthorized', retryable: false });
  expect(err.message).toMatch(/^provider oauthToken: HTTP 401/);
  expect(err.message).not.toContain(secret);
});

it('a cob under our txid for another amount is never taken for our charge', async () => {
  const payoutId = randomUUID();
  // Someone (an earlier deployment, an operator by hand) made a cob under this payout's txid.
  const made = await sandbox.api('PUT', `/cob/${txidOfPayout(payoutId)}`, cobBody('99.99'));
  expect(made.status).toBe(201);
  const err = await rejection(client().createCharge(charge(payoutId, 5_000n)));
  expect({ code: err.code, retryable: err.retryable }).toEqual({
    code: 'invalid_response',
    retryable: false,
  });
  expect(err.message).toMatch(/valor\.original differs from the request/);
});

it('the charge is a dynamic BR Code for exactly its amount, and its status keeps the payout', async () => {
  const payoutId = randomUUID();
  const created = await client().createCharge(charge(payoutId, 12_300n));
  expect(created.chargeId).toBe(txidOfPayout(payoutId));
  expect(created.pixCopyPaste).not.toContain(PIX_KEY);
  const status = await client().getChargeStatus(created.chargeId);
  expect(status).toMatchObject({ externalId: payoutId, amountBrl: '123.00', status: 'active' });
});
