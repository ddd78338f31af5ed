/**
 * The sandbox's own refusals, over real HTTP, with no chain configured (settlement must say so).
 */
import type { FastifyInstance } from 'fastify';

import { buildSandboxApp } from '../../dev/sandbox/app';
import { loadSandboxConfig } from '../../dev/sandbox/config';
import { startWebhookReceiver, type WebhookReceiver } from './support';
import { until } from '../support/until';

const API_KEY = 'sandbox-app-test-key';
const auth = { authorization: `Bearer ${API_KEY}` };

let receiver: WebhookReceiver;
let sandbox: FastifyInstance;
let baseUrl: string;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  sandbox = buildSandboxApp(
    loadSandboxConfig({
      SANDBOX_WEBHOOK_URL: receiver.url,
      SANDBOX_API_KEY: API_KEY,
      SANDBOX_LOG_LEVEL: 'silent',
    }),
  );
  await sandbox.listen({ port: 0, host: '127.0.0.1' });
  const address = sandbox.server.address();
  if (typeof address !== 'object' || !address) throw new Error('sandbox has no address');
  baseUrl = `http://127.0.0.1:${address.port}`;
});

afterAll(async () => {
  await sandbox?.close();
  await receiver?.close();
});

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = auth) {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const chargeBody = (externalId: string) => ({
  external_id: externalId,
  amount_brl: '10.00',
  payer_pix_key: 'payer@example.com',
  payer_pix_key_type: 'EMAIL',
  expires_in_seconds: 600,
});

test('provider endpoints need the bearer key; the payer endpoint and health do not', async () => {
  expect(await call('GET', '/fx/quote?pair=USDT-BRL', undefined, {})).toEqual({
    status: 401,
    body: { error: 'unauthorized' },
  });
  expect(
    (await call('GET', '/fx/quote?pair=USDT-BRL', undefined, { authorization: 'Bearer nope' })).status,
  ).toBe(401);
  expect((await call('GET', '/health', undefined, {})).status).toBe(200);
  expect((await call('POST', '/sandbox/payments', { pix_copy_paste: 'x' }, {})).status).toBe(400);
});

test('requests are validated and errors are {"error": string} naming the field', async () => {
  expect(await call('GET', '/fx/quote?pair=BTC-BRL')).toEqual({
    status: 400,
    body: { error: 'pair: must be USDT-BRL' },
  });
  const bad = await call('POST', '/pix/charges', { ...chargeBody('e1'), amount_brl: '10.5' });
  expect(bad.status).toBe(400);
  expect(bad.body.error).toMatch(/^amount_brl: /);
  expect((await call('POST', '/pix/charges', { ...chargeBody('e1'), amount_brl: '0.00' })).status).toBe(400);
  expect(
    (await call('POST', '/pix/charges', { ...chargeBody('e1'), payer_pix_key_type: 'IBAN' })).status,
  ).toBe(400);
  expect(await call('POST', '/pix/charges', '{not json')).toEqual({
    status: 400,
    body: { error: 'invalid JSON body' },
  });
  expect(await call('GET', '/nowhere')).toEqual({ status: 404, body: { error: 'not found' } });
  expect((await call('POST', '/pix/charges', { ...chargeBody('e1'), pad: 'x'.repeat(20_000) })).status).toBe(
    413,
  );
});

test('a charge is created once (201) and replayed (200)', async () => {
  const first = await call('POST', '/pix/charges', chargeBody('e2'));
  expect(first.status).toBe(201);
  const again = await call('POST', '/pix/charges', chargeBody('e2'));
  expect(again).toEqual({ status: 200, body: first.body });
  expect(first.body.charge_id).toMatch(/^chg_[0-9a-f]{22}$/);
});

test('settlement: unknown charge 404, wrong chain 400, no wallet configured 503', async () => {
  const settle = (chargeId: string, chainId = 42161) =>
    call('POST', '/settlements', {
      external_id: 'e3',
      charge_id: chargeId,
      receiver_wallet: '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
      chain_id: chainId,
    });
  expect(await settle('chg_unknown')).toEqual({ status: 404, body: { error: 'unknown charge' } });

  const charge = await call('POST', '/pix/charges', chargeBody('e3'));
  const chargeId = String(charge.body.charge_id);
  expect(await settle(chargeId, 1)).toEqual({ status: 400, body: { error: 'chain_id must be 42161' } });
  expect(await settle(chargeId)).toEqual({
    status: 409,
    body: { error: 'charge not paid', code: 'charge_not_paid' },
  });

  expect(
    (await call('POST', '/sandbox/payments', { pix_copy_paste: charge.body.pix_copy_paste })).status,
  ).toBe(202);
  const unavailable = await settle(chargeId);
  expect(unavailable.status).toBe(503);
  expect(unavailable.body.error).toContain('SANDBOX_USDT_ADDRESS');
});

test('a settlement with outcome settlement_failed needs no wallet, and its external_id cannot be reused', async () => {
  const charge = await call('POST', '/pix/charges', chargeBody('e4'));
  await call('POST', '/sandbox/payments', {
    pix_copy_paste: charge.body.pix_copy_paste,
    outcome: 'settlement_failed',
  });
  const request = {
    external_id: 'e4',
    charge_id: charge.body.charge_id,
    receiver_wallet: '0x90f79bf6eb2c4f870365e785982e1f101e93b906',
    chain_id: 42161,
  };
  const accepted = await call('POST', '/settlements', request);
  expect(accepted).toEqual({
    status: 202,
    // Its status as it is by the time of the answer: this one may already be refused.
    body: {
      settlement_id: expect.stringMatching(/^stl_/),
      status: expect.stringMatching(/^(pending|failed)$/),
      tx_hash: null,
      amount_usdt: null,
    },
  });
  expect((await call('POST', '/settlements', request)).body.settlement_id).toBe(accepted.body.settlement_id);
  // Refused before anything was sent: failed, and no transaction to look for.
  const settlementId = String(accepted.body.settlement_id);
  await until('the settlement failed', async () =>
    (await call('GET', `/settlements/${settlementId}`)).body.status === 'failed' ? true : undefined,
  );
  expect(await call('GET', `/settlements/${settlementId}`)).toEqual({
    status: 200,
    body: {
      settlement_id: settlementId,
      external_id: 'e4',
      charge_id: charge.body.charge_id,
      receiver_wallet: '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
      chain_id: 42161,
      status: 'failed',
      tx_hash: null,
      amount_usdt: null,
      failure_reason: 'simulated settlement failure',
      updated_at: expect.any(String),
    },
  });
  expect((await call('GET', `/settlements/${settlementId}`, undefined, {})).status).toBe(401);
  expect(await call('POST', '/settlements', request)).toMatchObject({
    status: 202,
    body: { status: 'failed' },
  });
  const other = { ...request, receiver_wallet: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC' };
  expect((await call('POST', '/settlements', other)).status).toBe(409);
});
