/**
 * What the service's API Pix client does beyond the provider contract (test/provider-contract): its
 * OAuth2 token on a 401 and a wrong secret, a txid that exists with another amount, against the
 * sandbox's API Pix face over mutual TLS. Nothing is mocked.
 */
import { randomUUID } from 'node:crypto';

import { ProviderError } from '../../src/adapters/provider/types';
import { txidOfPayout } from '../../src/adapters/provider/api-pix/txid';
import { PIX_KEY, cobBody, serviceClientOf, startApiPixSandbox, type ApiPixSandbox } from './api-pix-support';

let sandbox: ApiPixSandbox;
beforeAll(async () => {
  sandbox = await startApiPixSandbox();
});
afterAll(() => sandbox?.close());

const client = (secret?: string) => serviceClientOf(sandbox, secret);

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
  // Twice in a row: replicas may revoke each other's tokens; retried, never a verdict on the call.
  await sandbox.plainCall('POST', '/sandbox/faults', { route: 'GET /cob/{txid}', status: 401, count: 2 });
  const err = await rejection(pix.getChargeStatus(created.chargeId));
  expect({ code: err.code, retryable: err.retryable, status: err.httpStatus }).toEqual({
    code: 'unauthorized',
    retryable: true,
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

it('a removal refused while the cob reads payable and unpaid is asked again, never a verdict', async () => {
  const pix = client();
  const created = await pix.createCharge(charge());
  // As a replica behind the removal's refusal would answer: refused, yet ATIVA without Pix.
  await sandbox.plainCall('POST', '/sandbox/faults', { route: 'PATCH /cob/{txid}', status: 400, count: 1 });
  const err = await rejection(pix.cancelCharge(created.chargeId));
  expect({ code: err.code, retryable: err.retryable }).toEqual({
    code: 'inconsistent_answer',
    retryable: true,
  });
  // Asked again, the institution answers for itself.
  expect((await pix.cancelCharge(created.chargeId)).kind).toBe('removed');
});
