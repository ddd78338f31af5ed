/**
 * Error classification and response validation of the provider client, against a real HTTP server on
 * loopback that answers whatever each test scripts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { createHttpProvider } from '../../src/adapters/provider/http-provider';
import type { ProviderCallMetric } from '../../src/adapters/provider/http-call';
import { classifyStatus } from '../../src/adapters/provider/http-answers';
import { ProviderError } from '../../src/adapters/provider/types';
import { freePort } from '../sandbox/support';

type Script = (
  req: http.IncomingMessage,
  body: string,
) => { status: number; body?: unknown; headers?: object } | 'hang';

const API_KEY = 'super-secret-provider-key';
let server: http.Server;
let baseUrl: string;
let script: Script;
let seen: { method?: string; url?: string; authorization?: string; body: string }[];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, authorization: req.headers.authorization, body });
      const answer = script(req, body);
      if (answer === 'hang') return; // never answers: the client's timeout must fire
      const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? {});
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  seen = [];
});

const client = (extra: { timeoutMs?: number; onCall?: (m: ProviderCallMetric) => void } = {}) =>
  createHttpProvider({ baseUrl, apiKey: API_KEY, ...extra });

async function providerError(promise: Promise<unknown>): Promise<ProviderError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ProviderError)) throw new Error(`expected a ProviderError, got ${String(err)}`);
  // Whatever went wrong, the API key must not leak into the message.
  expect(err.message).not.toContain(API_KEY);
  return err;
}

const validQuote = { pair: 'USDT-BRL', rate: '5.50', quoted_at: '2026-11-21T22:00:00.000Z' };
const chargeRequest = {
  externalId: 'payout-1',
  amountCentavos: 10_000n,
  payerPixKey: '12345678901',
  payerPixKeyType: 'CPF',
  expiresInSeconds: 3600,
};
const validCharge = {
  charge_id: 'chg_1',
  external_id: 'payout-1',
  amount_brl: '100.00',
  pix_copy_paste: '00020126580014br.gov.bcb.pix0136...6304ABCD',
  expires_at: '2026-11-21T23:00:00.000Z',
};

describe('status classification', () => {
  test.each([
    [500, 'server_error', true],
    [502, 'server_error', true],
    [503, 'server_error', true],
    [408, 'timeout', true],
    [429, 'rate_limited', true],
    [400, 'bad_request', false],
    [401, 'unauthorized', false],
    [403, 'unauthorized', false],
    [404, 'not_found', false],
    [409, 'conflict', false],
    [422, 'bad_request', false],
  ])('HTTP %i is %s (retryable %s)', async (status, code, retryable) => {
    script = () => ({ status, body: { error: `provider says ${status}` } });
    const err = await providerError(client().getQuote());
    expect(err).toMatchObject({ code, retryable, httpStatus: status });
    expect(err.message).toContain(`provider says ${status}`);
  });

  test('the table itself', () => {
    expect(classifyStatus(504)).toEqual(['server_error', true]);
    expect(classifyStatus(404, 'unknown_notification')).toEqual(['unknown_notification', false]);
    expect(classifyStatus(302)).toEqual(['unexpected_status', false]);
  });

  test('a redirect is not followed', async () => {
    script = () => ({ status: 302, headers: { location: 'http://127.0.0.1:1/elsewhere' } });
    const err = await providerError(client().getQuote());
    expect(err).toMatchObject({ code: 'unexpected_status', retryable: false, httpStatus: 302 });
    expect(seen).toHaveLength(1);
  });

  test('a timeout is retryable', async () => {
    script = () => 'hang';
    const err = await providerError(client({ timeoutMs: 150 }).getQuote());
    expect(err).toMatchObject({ code: 'timeout', retryable: true });
    expect(err.httpStatus).toBeUndefined();
  });

  test('a refused connection is a retryable network error', async () => {
    const port = await freePort();
    const err = await providerError(
      createHttpProvider({ baseUrl: `http://127.0.0.1:${port}`, apiKey: API_KEY }).getQuote(),
    );
    expect(err).toMatchObject({ code: 'network_error', retryable: true });
    expect(err.message).toContain('ECONNREFUSED');
  });
});

describe('secrets stay out of errors', () => {
  test('an error body echoing the key or the token is redacted', async () => {
    const token = 'tok_abcdefghijklmnopqrstuvwxyz012345';
    script = () => ({ status: 500, body: { error: `bad ${API_KEY} for ${token}` } });
    const err = await providerError(client().fetchNotification(token));
    expect(err.message).not.toContain(token);
    expect(err.message).toContain('[redacted]');
  });

  test('a long error body is truncated', async () => {
    script = () => ({ status: 500, body: 'x'.repeat(10_000) });
    const err = await providerError(client().getQuote());
    expect(err.message.length).toBeLessThan(400);
  });
});

describe('requests', () => {
  test('bearer key, JSON body with snake_case and decimal-string amounts', async () => {
    script = () => ({ status: 201, body: validCharge });
    const charge = await client().createCharge(chargeRequest);
    expect(charge).toEqual({
      chargeId: 'chg_1',
      pixCopyPaste: validCharge.pix_copy_paste,
      expiresAt: validCharge.expires_at,
    });
    expect(seen[0]).toMatchObject({
      method: 'POST',
      url: '/pix/charges',
      authorization: `Bearer ${API_KEY}`,
    });
    expect(JSON.parse(seen[0]!.body)).toEqual({
      external_id: 'payout-1',
      amount_brl: '100.00',
      payer_pix_key: '12345678901',
      payer_pix_key_type: 'CPF',
      expires_in_seconds: 3600,
    });
  });

  test('the token is escaped in the path', async () => {
    script = () => ({ status: 404, body: { error: 'unknown notification' } });
    const err = await providerError(client().fetchNotification('a/../b?c=d#e'));
    expect(err).toMatchObject({ code: 'unknown_notification', retryable: false, httpStatus: 404 });
    expect(seen[0]!.url).toBe('/pix/notification/a%2F..%2Fb%3Fc%3Dd%23e');
  });

  test('onCall reports each call', async () => {
    const calls: ProviderCallMetric[] = [];
    script = () => ({ status: 200, body: validQuote });
    await client({ onCall: (m) => calls.push(m) }).getQuote();
    script = () => ({ status: 503 });
    await providerError(client({ onCall: (m) => calls.push(m) }).getQuote());
    expect(calls).toEqual([
      { operation: 'getQuote', durationMs: expect.any(Number), outcome: 'ok', status: 200 },
      { operation: 'getQuote', durationMs: expect.any(Number), outcome: 'error', status: 503 },
    ]);
  });
});

describe('malformed answers are never trusted, never retried', () => {
  test.each<[string, () => Promise<unknown>, unknown]>([
    ['a body that is not JSON', () => client().getQuote(), '<html>oops</html>'],
    ['a quote for another pair', () => client().getQuote(), { ...validQuote, pair: 'USDT-USD' }],
    ['a zero rate', () => client().getQuote(), { ...validQuote, rate: '0.00' }],
    ['a numeric rate', () => client().getQuote(), { ...validQuote, rate: 5.5 }],
    [
      'a charge for another payout',
      () => client().createCharge(chargeRequest),
      { ...validCharge, external_id: 'x' },
    ],
    [
      'a charge for another amount',
      () => client().createCharge(chargeRequest),
      { ...validCharge, amount_brl: '1.00' },
    ],
    [
      'a charge without a code',
      () => client().createCharge(chargeRequest),
      { ...validCharge, pix_copy_paste: '' },
    ],
    [
      'a settlement without id',
      () =>
        client().requestSettlement({ externalId: 'p', chargeId: 'c', receiverWallet: '0x0', chainId: 42161 }),
      { status: 'pending' },
    ],
    [
      'an event of an unknown type',
      () => client().fetchNotification('tok'),
      {
        type: 'pix.refunded',
        event_id: 'e',
        charge_id: 'c',
        external_id: 'x',
        occurred_at: '2026-11-21T22:00:00Z',
      },
    ],
    [
      'a settlement event with a short tx hash',
      () => client().fetchNotification('tok'),
      {
        type: 'settlement.completed',
        event_id: 'e',
        charge_id: 'c',
        external_id: 'x',
        occurred_at: '2026-11-21T22:00:00Z',
        tx_hash: '0x1234',
        amount_usdt: '1.000000',
        chain_id: 42161,
        confirmed_at: '2026-11-21T22:00:00Z',
      },
    ],
    [
      'an event for another token',
      () => client().fetchNotification('tok'),
      {
        token: 'other',
        type: 'settlement.failed',
        event_id: 'e',
        charge_id: 'c',
        external_id: 'x',
        occurred_at: '2026-11-21T22:00:00Z',
        failure_reason: 'r',
      },
    ],
  ])('%s', async (_name, callIt, body) => {
    script = () => ({ status: 200, body });
    const err = await providerError(callIt());
    expect(err).toMatchObject({ code: 'invalid_response', retryable: false });
  });

  test('a valid settlement.completed event is mapped to camelCase', async () => {
    const hash = `0x${'ab'.repeat(32)}`;
    script = () => ({
      status: 200,
      body: {
        token: 'tok',
        type: 'settlement.completed',
        event_id: 'evt_1',
        charge_id: 'chg_1',
        external_id: 'payout-1',
        occurred_at: '2026-11-21T22:00:00.000Z',
        tx_hash: hash,
        amount_usdt: '17.825311',
        chain_id: 42161,
        confirmed_at: '2026-11-21T22:00:01.000Z',
      },
    });
    expect(await client().fetchNotification('tok')).toEqual({
      type: 'settlement.completed',
      eventId: 'evt_1',
      chargeId: 'chg_1',
      externalId: 'payout-1',
      occurredAt: '2026-11-21T22:00:00.000Z',
      txHash: hash,
      amountUsdt: '17.825311',
      chainId: 42161,
      confirmedAt: '2026-11-21T22:00:01.000Z',
    });
  });
});

describe('settlements', () => {
  const hash = `0x${'cd'.repeat(32)}` as const;
  const settlementRequest = {
    externalId: 'payout-1',
    chargeId: 'chg_1',
    receiverWallet: '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
    chainId: 42161,
  };
  const validStatus = {
    settlement_id: 'stl_1',
    external_id: 'payout-1',
    charge_id: 'chg_1',
    receiver_wallet: '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
    chain_id: 42161,
    status: 'completed',
    tx_hash: hash,
    amount_usdt: '17.825311',
    failure_reason: null,
    updated_at: '2026-11-21T22:00:01.000Z',
  };

  test('a first request answers pending; a repeat answers the current status and its transaction', async () => {
    script = () => ({ status: 202, body: { settlement_id: 'stl_1', status: 'pending' } });
    expect(await client().requestSettlement(settlementRequest)).toEqual({
      settlementId: 'stl_1',
      status: 'pending',
    });
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/settlements' });
    expect(JSON.parse(seen[0]!.body)).toEqual({
      external_id: 'payout-1',
      charge_id: 'chg_1',
      receiver_wallet: settlementRequest.receiverWallet,
      chain_id: 42161,
    });

    script = () => ({
      status: 202,
      body: { settlement_id: 'stl_1', status: 'broadcast', tx_hash: hash, amount_usdt: '17.825311' },
    });
    expect(await client().requestSettlement(settlementRequest)).toEqual({
      settlementId: 'stl_1',
      status: 'broadcast',
      txHash: hash,
    });
  });

  test('409 charge_not_paid has its own code; any other 409 stays conflict', async () => {
    script = () => ({ status: 409, body: { error: 'charge not paid', code: 'charge_not_paid' } });
    expect(await providerError(client().requestSettlement(settlementRequest))).toMatchObject({
      code: 'charge_not_paid',
      retryable: false,
      httpStatus: 409,
    });
    script = () => ({ status: 409, body: { error: 'charge already has a settlement' } });
    expect(await providerError(client().requestSettlement(settlementRequest))).toMatchObject({
      code: 'conflict',
      httpStatus: 409,
    });
    // Only settlement requests know the code: elsewhere a 409 is a conflict whatever it says.
    script = () => ({ status: 409, body: { error: 'x', code: 'charge_not_paid' } });
    expect(await providerError(client().createCharge(chargeRequest))).toMatchObject({ code: 'conflict' });
  });

  test('the settlement status is validated and mapped; null fields are left out', async () => {
    script = () => ({ status: 200, body: validStatus });
    expect(await client().getSettlementStatus('stl_1')).toEqual({
      settlementId: 'stl_1',
      externalId: 'payout-1',
      chargeId: 'chg_1',
      receiverWallet: validStatus.receiver_wallet,
      chainId: 42161,
      status: 'completed',
      txHash: hash,
      amountUsdt: '17.825311',
      updatedAt: '2026-11-21T22:00:01.000Z',
    });
    expect(seen[0]).toMatchObject({
      method: 'GET',
      url: '/settlements/stl_1',
      authorization: `Bearer ${API_KEY}`,
    });

    const refused = {
      ...validStatus,
      status: 'failed',
      tx_hash: null,
      amount_usdt: null,
      failure_reason: 'no',
    };
    script = () => ({ status: 200, body: refused });
    const failed = await client().getSettlementStatus('stl_1');
    expect(failed).toMatchObject({ status: 'failed', failureReason: 'no' });
    expect(failed).not.toHaveProperty('txHash');
  });

  test('404 is unknown_settlement (the caller decides), and the id is escaped in the path', async () => {
    script = () => ({ status: 404, body: { error: 'unknown settlement' } });
    const err = await providerError(client().getSettlementStatus('stl/../x'));
    expect(err).toMatchObject({ code: 'unknown_settlement', retryable: false, httpStatus: 404 });
    expect(seen[0]!.url).toBe('/settlements/stl%2F..%2Fx');
  });

  test.each<[string, unknown]>([
    ['another settlement', { ...validStatus, settlement_id: 'stl_2' }],
    // A failed status that merely omits tx_hash must not pass for "nothing was sent".
    [
      'a failed status without the tx_hash field',
      (({ tx_hash: _, ...rest }) => ({ ...rest, status: 'failed' }))(validStatus),
    ],
    ['broadcast without a transaction', { ...validStatus, status: 'broadcast', tx_hash: null }],
    ['pending with a transaction', { ...validStatus, status: 'pending' }],
    ['completed without an amount', { ...validStatus, amount_usdt: null }],
    ['an unknown status', { ...validStatus, status: 'sent' }],
    ['a short tx hash', { ...validStatus, tx_hash: '0x12' }],
  ])('a settlement status with %s is invalid_response', async (_name, body) => {
    script = () => ({ status: 200, body });
    expect(await providerError(client().getSettlementStatus('stl_1'))).toMatchObject({
      code: 'invalid_response',
      retryable: false,
    });
  });

  test('a settlement answer with an unknown status is invalid_response', async () => {
    script = () => ({ status: 202, body: { settlement_id: 'stl_1', status: 'done' } });
    expect(await providerError(client().requestSettlement(settlementRequest))).toMatchObject({
      code: 'invalid_response',
    });
  });
});
