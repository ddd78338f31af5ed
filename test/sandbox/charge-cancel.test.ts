/**
 * Removing a PIX charge (the provider side of cancelling a payout): the service's HTTP client
 * against the sandbox over loopback, with a real webhook receiver. Nothing is mocked.
 */
import type { FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';

import { createHttpProvider } from '../../src/adapters/provider/http-provider';
import { ProviderError, type PaymentProvider } from '../../src/adapters/provider/types';
import { buildSandboxApp } from '../../dev/sandbox/app';
import { loadSandboxConfig } from '../../dev/sandbox/config';
import { startWebhookReceiver, type WebhookReceiver } from './support';

const API_KEY = 'sandbox-test-key-0123456789';

let receiver: WebhookReceiver;
let sandbox: FastifyInstance;
let baseUrl: string;
let provider: PaymentProvider;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  sandbox = buildSandboxApp(
    loadSandboxConfig({
      SANDBOX_PORT: '0',
      SANDBOX_WEBHOOK_URL: receiver.url,
      SANDBOX_API_KEY: API_KEY,
      SANDBOX_LOG_LEVEL: 'silent',
    }),
  );
  baseUrl = await sandbox.listen({ host: '127.0.0.1', port: 0 });
  provider = createHttpProvider({ baseUrl, apiKey: API_KEY, timeoutMs: 5_000 });
});
afterAll(async () => {
  await sandbox?.close();
  await receiver?.close();
});

const newCharge = () =>
  provider.createCharge({
    externalId: randomUUID(),
    amountCentavos: 10_000n,
    payerPixKey: '12345678901',
    payerPixKeyType: 'CPF',
    expiresInSeconds: 3600,
  });

const pay = (pixCopyPaste: string) =>
  fetch(`${baseUrl}/sandbox/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ pix_copy_paste: pixCopyPaste }),
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

test('a removed charge can no longer be paid; removing it again answers the first removal', async () => {
  const charge = await newCharge();
  const removed = await provider.cancelCharge(charge.chargeId);
  expect(removed).toEqual({ kind: 'removed', removedAt: expect.any(String) });
  expect(Date.parse((removed as { removedAt: string }).removedAt)).not.toBeNaN();

  const payment = await pay(charge.pixCopyPaste);
  expect(payment.status).toBe(410);
  expect(await payment.json()).toEqual({ error: 'charge was removed by the receiver' });

  expect(await provider.cancelCharge(charge.chargeId)).toEqual(removed);
});

test('a charge paid first is not removed: already_paid, and the payment stands', async () => {
  const charge = await newCharge();
  const payment = await pay(charge.pixCopyPaste);
  expect(payment.status).toBe(202);
  const token = await receiver.takeToken();
  const paid = await provider.fetchNotification(token);
  expect(paid).toMatchObject({ type: 'pix.received', chargeId: charge.chargeId });

  expect(await provider.cancelCharge(charge.chargeId)).toEqual({ kind: 'already_paid' });
  // The payment stands: the charge is still paid, with that one payment.
  expect(await provider.getChargeStatus(charge.chargeId)).toMatchObject({
    status: 'paid',
    payments: [{ eventId: paid.eventId, amountBrl: '100.00' }],
  });
  // And it was not removed: the code still takes payments (the provider records each one; the
  // service decides which settles), where a removed charge answers 410.
  const again = await pay(charge.pixCopyPaste);
  expect(again.status).toBe(202);
  expect(await provider.fetchNotification(await receiver.takeToken())).toMatchObject({
    type: 'pix.received',
    chargeId: charge.chargeId,
  });
});

test('an unknown charge is not_found, not retried', async () => {
  const err = await rejection(provider.cancelCharge('chg_00000000000000000000ff'));
  expect({ code: err.code, retryable: err.retryable, status: err.httpStatus }).toEqual({
    code: 'not_found',
    retryable: false,
    status: 404,
  });
});

test('the contract: API key required, body must be {"status": "removed"}', async () => {
  const charge = await newCharge();
  const err = await rejection(
    createHttpProvider({ baseUrl, apiKey: 'wrong-key-123456' }).cancelCharge(charge.chargeId),
  );
  expect(err.code).toBe('unauthorized');

  const patch = (body: unknown) =>
    fetch(`${baseUrl}/pix/charges/${charge.chargeId}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify(body),
    });
  const wrong = await patch({ status: 'cancelled' });
  expect(wrong.status).toBe(400);
  expect(await wrong.json()).toEqual({ error: 'status: must be "removed"' });
  // Nothing was removed by the refused requests.
  expect((await pay(charge.pixCopyPaste)).status).toBe(202);
});

test('the charge-status endpoint reports a removed charge as removed, and a paid one stays paid', async () => {
  const removed = await newCharge();
  expect((await provider.getChargeStatus(removed.chargeId)).status).toBe('active');
  await provider.cancelCharge(removed.chargeId);
  expect(await provider.getChargeStatus(removed.chargeId)).toMatchObject({ status: 'removed', payments: [] });

  const paid = await newCharge();
  expect((await pay(paid.pixCopyPaste)).status).toBe(202);
  expect(await provider.cancelCharge(paid.chargeId)).toEqual({ kind: 'already_paid' });
  expect((await provider.getChargeStatus(paid.chargeId)).status).toBe('paid');
});

test('a payment of another amount does not stop the removal, and stays listed on the charge', async () => {
  const charge = await newCharge();
  const wrong = await fetch(`${baseUrl}/sandbox/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ pix_copy_paste: charge.pixCopyPaste, amount_brl: 50 }),
  });
  expect(wrong.status).toBe(202);
  // The payment is recorded before the answer (its webhook is another test's concern).
  const { event_id: eventId } = (await wrong.json()) as { event_id: string };

  expect(await provider.cancelCharge(charge.chargeId)).toEqual({
    kind: 'removed',
    removedAt: expect.any(String),
  });
  expect((await pay(charge.pixCopyPaste)).status).toBe(410);
  expect(await provider.getChargeStatus(charge.chargeId)).toMatchObject({
    payments: [{ eventId, amountBrl: '50.00' }],
  });
});
