/**
 * The provider contract end to end: the service's HTTP client against the sandbox over loopback, a
 * real webhook receiver, and real USDT transfers on anvil. Nothing is mocked.
 */
import type { FastifyInstance } from 'fastify';
import { createPublicClient, erc20Abi, http, parseEventLogs, type Address, type PublicClient } from 'viem';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';

import { createHttpProvider } from '../../src/adapters/provider/http-provider';
import { createCachedQuote } from '../../src/adapters/provider/quote-cache';
import { ProviderError, type PaymentProvider } from '../../src/adapters/provider/types';
import { encodeBrCode, parseBrCode } from '../../src/domain/brcode';
import type { ProviderEvent } from '../../src/domain/provider-event';
import { usdtUnitsForBrl, usdtUnitsFromDecimal } from '../../src/domain/money';
import { ANVIL_DEV_ACCOUNTS } from '../../dev/local/infra/anvil';
import { startTestChain, type TestChain } from '../support/chain';
import { until } from '../support/until';
import { buildSandboxApp } from '../../dev/sandbox/app';
import { loadSandboxConfig, type SandboxConfig } from '../../dev/sandbox/config';
import { startWebhookReceiver, type WebhookReceiver } from './support';

const API_KEY = 'sandbox-test-key-0123456789';
const sandboxWallet = ANVIL_DEV_ACCOUNTS[1];

let anvil: TestChain;
let chain: PublicClient;
let usdt: Address;
let receiver: WebhookReceiver;
let sandbox: FastifyInstance;
let config: SandboxConfig;
let baseUrl: string;
let provider: PaymentProvider;
const requestsByRoute = new Map<string, number>();

beforeAll(async () => {
  anvil = await startTestChain({
    funded: [{ wallet: sandboxWallet.address, usdtUnits: 1_000_000n * 10n ** 6n }],
  });
  chain = createPublicClient({ transport: http(anvil.rpcUrl) });
  usdt = anvil.usdtAddress;
  receiver = await startWebhookReceiver();
  config = loadSandboxConfig({
    SANDBOX_PORT: '0',
    SANDBOX_WEBHOOK_URL: receiver.url,
    SANDBOX_API_KEY: API_KEY,
    SANDBOX_EVM_RPC_URL: anvil.rpcUrl,
    SANDBOX_USDT_ADDRESS: usdt,
    SANDBOX_WALLET_PRIVATE_KEY: sandboxWallet.privateKey,
    SANDBOX_LOG_LEVEL: 'silent',
  });
  sandbox = buildSandboxApp(config);
  sandbox.addHook('onRequest', async (request) => {
    const route = `${request.method} ${request.routeOptions.url ?? request.url}`;
    requestsByRoute.set(route, (requestsByRoute.get(route) ?? 0) + 1);
  });
  await sandbox.listen({ port: 0, host: '127.0.0.1' });
  const address = sandbox.server.address();
  if (typeof address !== 'object' || !address) throw new Error('sandbox has no address');
  baseUrl = `http://127.0.0.1:${address.port}`;
  provider = createHttpProvider({ baseUrl, apiKey: API_KEY, timeoutMs: 5_000 });
}, 60_000);

afterAll(async () => {
  await sandbox?.close();
  await receiver?.close();
  await anvil?.stop();
});

let externalSeq = 0;
function newExternalId(): string {
  externalSeq += 1;
  return `00000000-0000-4000-8000-${String(externalSeq).padStart(12, '0')}`;
}

async function createCharge(amountCentavos: bigint, expiresInSeconds = 3600) {
  const externalId = newExternalId();
  const charge = await provider.createCharge({
    externalId,
    amountCentavos,
    payerPixKey: '12345678901',
    payerPixKeyType: 'CPF',
    expiresInSeconds,
  });
  return { externalId, ...charge };
}

async function pay(
  pixCopyPaste: string,
  outcome?: 'settled' | 'settlement_failed',
  edits: { amount_brl?: number; notify?: boolean } = {},
) {
  const res = await fetch(`${baseUrl}/sandbox/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ pix_copy_paste: pixCopyPaste, ...(outcome ? { outcome } : {}), ...edits }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Waits for the next webhook and fetches its event back, as the service does. */
async function nextNotification(): Promise<ProviderEvent> {
  return provider.fetchNotification(await receiver.takeToken());
}

async function usdtBalance(owner: Address): Promise<bigint> {
  return chain.readContract({ address: usdt, abi: erc20Abi, functionName: 'balanceOf', args: [owner] });
}

function freshWallet(): Address {
  return privateKeyToAccount(generatePrivateKey()).address;
}

async function rejection(promise: Promise<unknown>): Promise<ProviderError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ProviderError)) throw new Error(`expected a ProviderError, got ${String(err)}`);
  return err;
}

test('quote: the sandbox spot rate', async () => {
  const quote = await provider.getQuote();
  expect(quote.rate).toBe('5.50');
  expect(Date.parse(quote.quotedAt)).not.toBeNaN();
});

test('createCharge is idempotent on external_id and refuses a reuse with another amount', async () => {
  const first = await createCharge(10_000n);
  const again = await provider.createCharge({
    externalId: first.externalId,
    amountCentavos: 10_000n,
    payerPixKey: '12345678901',
    payerPixKeyType: 'CPF',
    expiresInSeconds: 3600,
  });
  expect(again).toEqual({
    chargeId: first.chargeId,
    pixCopyPaste: first.pixCopyPaste,
    expiresAt: first.expiresAt,
  });

  const err = await rejection(
    provider.createCharge({
      externalId: first.externalId,
      amountCentavos: 20_000n,
      payerPixKey: '12345678901',
      payerPixKeyType: 'CPF',
      expiresInSeconds: 3600,
    }),
  );
  expect(err).toMatchObject({ code: 'conflict', retryable: false, httpStatus: 409 });
});

test('the charge is a valid BR Code carrying the amount and the charge id as txid', async () => {
  const charge = await createCharge(12_345n);
  const code = parseBrCode(charge.pixCopyPaste);
  expect(code.transactionAmount).toBe('123.45');
  expect(code.txid).toBe(charge.chargeId.replace(/[^A-Za-z0-9]/g, ''));
  expect(code.txid!.length).toBeLessThanOrEqual(25);
  expect(code.merchantAccount).toMatchObject({ gui: 'br.gov.bcb.pix', key: config.pixKey });
  expect(code.merchantName).toBe(config.merchantName);
  expect(code.merchantCity).toBe(config.merchantCity);
});

test('a payment sends a webhook whose token fetches pix.received; a static code can be paid again', async () => {
  const charge = await createCharge(10_000n);
  const paid = await pay(charge.pixCopyPaste);
  expect(paid).toEqual({
    status: 202,
    body: { charge_id: charge.chargeId, event_id: expect.stringMatching(/^evt_/), status: 'accepted' },
  });

  const event = await nextNotification();
  expect(event).toMatchObject({
    type: 'pix.received',
    chargeId: charge.chargeId,
    externalId: charge.externalId,
    amountBrl: '100.00',
  });
  expect(event.eventId).toBe(paid.body.event_id);

  const again = await pay(charge.pixCopyPaste);
  expect(again.status).toBe(202);
  expect(await nextNotification()).toMatchObject({ eventId: again.body.event_id, amountBrl: '100.00' });
});

test('the payer may edit the amount or lose the webhook; the charge status shows every payment', async () => {
  const charge = await createCharge(10_000n);
  expect(await provider.getChargeStatus(charge.chargeId)).toMatchObject({
    status: 'active',
    amountBrl: '100.00',
    payments: [],
  });
  const edited = await pay(charge.pixCopyPaste, undefined, { amount_brl: 1.5 });
  expect(await nextNotification()).toMatchObject({ eventId: edited.body.event_id, amountBrl: '1.50' });
  const lost = await pay(charge.pixCopyPaste, undefined, { notify: false });
  expect(lost.status).toBe(202);

  const status = await provider.getChargeStatus(charge.chargeId);
  expect(status).toMatchObject({
    chargeId: charge.chargeId,
    externalId: charge.externalId,
    status: 'paid',
    expiresAt: charge.expiresAt,
    payments: [
      { eventId: edited.body.event_id, amountBrl: '1.50' },
      { eventId: lost.body.event_id, amountBrl: '100.00' },
    ],
  });
  // The lost payment's webhook never comes; a redelivery by the provider's operator brings it.
  const redelivered = await fetch(`${baseUrl}/sandbox/notifications/redeliver`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ event_id: lost.body.event_id }),
  });
  expect(redelivered.status).toBe(202);
  expect(await nextNotification()).toMatchObject({ eventId: lost.body.event_id, amountBrl: '100.00' });
  await expect(provider.getChargeStatus('chg_unknown')).rejects.toMatchObject({ code: 'not_found' });
});

/** Waits for the provider to call the charge expired (on its own clock), and returns its status. */
const expired = (chargeId: string) =>
  until(`charge ${chargeId} expired`, async () => {
    const status = await provider.getChargeStatus(chargeId);
    return status.status === 'expired' ? status : undefined;
  });

test('a charge nobody paid is expired after its expiry', async () => {
  const charge = await createCharge(5_000n, 1);
  expect(await expired(charge.chargeId)).toMatchObject({ status: 'expired', payments: [] });
  expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(charge.expiresAt));
});

test('a payment after expiry is still accepted by the bank and notified', async () => {
  const charge = await createCharge(5_000n, 1);
  await expired(charge.chargeId);
  expect((await pay(charge.pixCopyPaste)).status).toBe(202);
  expect(await nextNotification()).toMatchObject({ type: 'pix.received', chargeId: charge.chargeId });
});

test('the payer endpoint refuses broken, foreign and tampered codes', async () => {
  const charge = await createCharge(10_000n);
  const corrupted =
    charge.pixCopyPaste.slice(0, -4) + (charge.pixCopyPaste.endsWith('0000') ? '1111' : '0000');
  expect((await pay(corrupted)).status).toBe(400);
  expect((await pay('not a br code')).status).toBe(400);

  const parsed = parseBrCode(charge.pixCopyPaste);
  const forge = (pixKey: string, amount: string) =>
    encodeBrCode({ pixKey, merchantName: 'SOMEONE', merchantCity: 'RIO', amount, txid: parsed.txid! });
  // Same txid, but paying another key: not this provider's charge.
  expect((await pay(forge('someone-else@example.com', '100.00'))).status).toBe(404);
  // This provider's key and txid with a tampered amount.
  expect((await pay(forge(config.pixKey, '1.00'))).status).toBe(400);
  // Nothing was paid by any of these.
  expect((await pay(charge.pixCopyPaste)).status).toBe(202);
  expect(await nextNotification()).toMatchObject({ type: 'pix.received', chargeId: charge.chargeId });
});

test('settlement sends real USDT and settlement.completed matches the chain', async () => {
  const charge = await createCharge(10_000n);
  await pay(charge.pixCopyPaste);
  expect(await nextNotification()).toMatchObject({ type: 'pix.received', chargeId: charge.chargeId });

  const wallet = freshWallet();
  const request = {
    externalId: charge.externalId,
    chargeId: charge.chargeId,
    receiverWallet: wallet,
    chainId: 42161,
  };
  const { settlementId, status } = await provider.requestSettlement(request);
  expect(settlementId).toMatch(/^stl_/);
  expect(status).toBe('pending');
  // A retried request is answered with the same settlement, as it is now, and moves no more money.
  const again = await provider.requestSettlement(request);
  expect(again).toMatchObject({ settlementId });
  expect(['pending', 'broadcast', 'completed']).toContain(again.status);

  const event = await nextNotification();
  if (event.type !== 'settlement.completed') throw new Error(`unexpected ${event.type}`);
  const expectedUnits = usdtUnitsForBrl(10_000n, '5.50', '0.02');
  expect(usdtUnitsFromDecimal(event.amountUsdt)).toBe(expectedUnits);
  expect(event).toMatchObject({ chargeId: charge.chargeId, externalId: charge.externalId, chainId: 42161 });

  const receipt = await chain.getTransactionReceipt({ hash: event.txHash });
  expect(receipt.status).toBe('success');
  const transfers = parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs: receipt.logs });
  expect(transfers).toHaveLength(1);
  expect(transfers[0]!.address.toLowerCase()).toBe(usdt.toLowerCase());
  expect(transfers[0]!.args).toEqual({ from: sandboxWallet.address, to: wallet, value: expectedUnits });
  expect(await usdtBalance(wallet)).toBe(expectedUnits);
});

test('outcome settlement_failed: settlement.failed and no USDT moves', async () => {
  const charge = await createCharge(10_000n);
  await pay(charge.pixCopyPaste, 'settlement_failed');
  expect(await nextNotification()).toMatchObject({ type: 'pix.received', chargeId: charge.chargeId });
  const sandboxBefore = await usdtBalance(sandboxWallet.address);

  const wallet = freshWallet();
  await provider.requestSettlement({
    externalId: charge.externalId,
    chargeId: charge.chargeId,
    receiverWallet: wallet,
    chainId: 42161,
  });
  const event = await nextNotification();
  expect(event).toMatchObject({
    type: 'settlement.failed',
    chargeId: charge.chargeId,
    externalId: charge.externalId,
  });
  expect(await usdtBalance(wallet)).toBe(0n);
  expect(await usdtBalance(sandboxWallet.address)).toBe(sandboxBefore);
});

test('a settlement for an unpaid charge is charge_not_paid, distinct from other conflicts', async () => {
  const charge = await createCharge(10_000n);
  const err = await rejection(
    provider.requestSettlement({
      externalId: charge.externalId,
      chargeId: charge.chargeId,
      receiverWallet: freshWallet(),
      chainId: 42161,
    }),
  );
  expect(err).toMatchObject({ code: 'charge_not_paid', retryable: false, httpStatus: 409 });
});

test('an unknown token is unknown_notification, not retryable, and the token stays out of the message', async () => {
  const token = 'no-such-token_0123456789abcdef';
  const err = await rejection(provider.fetchNotification(token));
  expect(err).toMatchObject({ code: 'unknown_notification', retryable: false, httpStatus: 404 });
  expect(err.message).not.toContain(token);
});

test('a wrong API key is refused as unauthorized, and the key never appears in the error', async () => {
  const wrongKey = 'wrong-key-9876543210';
  const err = await rejection(createHttpProvider({ baseUrl, apiKey: wrongKey }).getQuote());
  expect(err).toMatchObject({ code: 'unauthorized', retryable: false, httpStatus: 401 });
  expect(err.message).not.toContain(wrongKey);
});

test('webhooks are retried with backoff until a 2xx: 500, 500, 200 deliver one token three times', async () => {
  const charge = await createCharge(10_000n);
  const before = receiver.deliveries.length;
  receiver.failNext(2);
  await pay(charge.pixCopyPaste);
  const token = await receiver.takeToken();

  const attempts = receiver.deliveries.slice(before);
  expect(attempts.map((d) => d.status)).toEqual([500, 500, 200]);
  expect(attempts.every((d) => d.token === token)).toBe(true);
  // Backoff: 0.5 s then 1 s (with some slack for timers).
  expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(450);
  expect(attempts[2]!.at - attempts[1]!.at).toBeGreaterThanOrEqual(950);
  expect(await provider.fetchNotification(token)).toMatchObject({
    type: 'pix.received',
    chargeId: charge.chargeId,
  });
});

test('the quote cache collapses concurrent calls into one provider request and honours its TTL', async () => {
  let clock = 1_000_000;
  const quote = createCachedQuote(provider, { ttlMs: 30_000, now: () => clock });
  const count = () => requestsByRoute.get('GET /fx/quote') ?? 0;
  const before = count();

  const rates = await Promise.all(Array.from({ length: 10 }, () => quote()));
  expect(rates.map((r) => r.rate)).toEqual(Array(10).fill('5.50'));
  expect(count() - before).toBe(1);

  clock += 29_999;
  await quote();
  expect(count() - before).toBe(1);

  clock += 1;
  await Promise.all([quote(), quote()]);
  expect(count() - before).toBe(2);
});
