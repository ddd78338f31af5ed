/**
 * The test provider proxy's counters, over real HTTP in front of a real sandbox: a repeated charge is
 * answered 200, so only counting every request can show that the service asked twice.
 */
import type { FastifyInstance } from 'fastify';

import { buildSandboxApp } from '../../dev/sandbox/app';
import { loadSandboxConfig } from '../../dev/sandbox/config';
import { startProviderProxy, type ProviderProxy } from '../support/provider-proxy';
import { freePort } from './support';

let sandbox: FastifyInstance;
let proxy: ProviderProxy;

beforeAll(async () => {
  sandbox = buildSandboxApp(loadSandboxConfig({ SANDBOX_LOG_LEVEL: 'silent' }));
  await sandbox.listen({ port: 0, host: '127.0.0.1' });
  const address = sandbox.server.address();
  if (typeof address !== 'object' || !address) throw new Error('sandbox has no address');
  proxy = await startProviderProxy(`http://127.0.0.1:${address.port}`, await freePort());
});

afterAll(async () => {
  await proxy?.close();
  await sandbox?.close();
});

const post = (path: string, body: unknown) =>
  fetch(`${proxy.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then((r) => r.status);

test('every charge and settlement request is counted per external_id; chargesCreated counts 201s', async () => {
  const charge = {
    external_id: 'payout-a',
    amount_brl: '10.00',
    payer_pix_key: 'payer@example.com',
    payer_pix_key_type: 'EMAIL',
    expires_in_seconds: 600,
  };
  expect(await post('/pix/charges', charge)).toBe(201);
  expect(await post('/pix/charges', charge)).toBe(200);
  expect(await post('/pix/charges', { ...charge, amount_brl: '11.00' })).toBe(409);
  // Refused requests count too: the provider saw them.
  expect(
    await post('/settlements', {
      external_id: 'payout-a',
      charge_id: 'chg_x',
      receiver_wallet: 'no',
      chain_id: 1,
    }),
  ).toBe(400);
  expect(
    await post('/settlements', {
      external_id: 'payout-a',
      charge_id: 'chg_x',
      receiver_wallet: 'no',
      chain_id: 1,
    }),
  ).toBe(400);

  expect(proxy.chargesCreated()).toEqual(new Map([['payout-a', 1]]));
  expect(proxy.chargeRequests()).toEqual(new Map([['payout-a', 3]]));
  expect(proxy.settlementRequests()).toEqual(new Map([['payout-a', 2]]));
});
