import Ajv2020 from 'ajv/dist/2020';
import { ZERO_ADDRESS } from '../../src/domain/wallet';
import { useStack, VALID_PAYOUT } from '../support/stack';
import { call, expectError, post } from './helpers';

// What the partner API tells the layers around it (docs/api.md "Caching and content types", "Request
// bodies"), against the real stack: no cache keeps payout data, no body is read two ways, and the
// served document forbids what the server refuses.
describe('partner API HTTP hygiene', () => {
  const stack = useStack();
  let apiKey: string;
  let payoutId: string;

  beforeAll(async () => {
    ({ apiKey } = await stack.createPartner('hygiene'));
    payoutId = (await stack.createPayout(apiKey)).payout.id;
  });

  const expectPrivate = (res: { headers: Headers }) => {
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  };

  it('answers with payout data carry Cache-Control: no-store and nosniff, errors too', async () => {
    const auth = { 'x-api-key': apiKey };
    const created = await post(stack.apiUrl, apiKey, VALID_PAYOUT);
    expect(created.status).toBe(201);
    expectPrivate(created);
    const read = await call(stack.apiUrl, `/v1/payouts/${payoutId}`, { headers: auth });
    expect(read.status).toBe(200);
    expectPrivate(read);
    const list = await call(stack.apiUrl, '/v1/payouts?limit=1', { headers: auth });
    expect(list.status).toBe(200);
    expectPrivate(list);
    const quote = await call(stack.apiUrl, '/v1/quotes?amount_brl=100', { headers: auth });
    expectPrivate(quote);
    const unknown = await call(stack.apiUrl, '/v1/payouts/00000000-0000-4000-8000-000000000000', {
      headers: auth,
    });
    expect(unknown.status).toBe(404);
    expectPrivate(unknown);
    // The QR image keeps its own rule (a browser may keep it but must ask again).
    const qr = await call(stack.apiUrl, `/v1/payouts/${payoutId}/qr.svg`, { headers: auth });
    expect(qr.headers.get('cache-control')).toBe('private, no-cache');
    expect(qr.headers.get('x-content-type-options')).toBe('nosniff');
    // The public document may be cached, but never sniffed.
    const doc = await call(stack.apiUrl, '/openapi.json');
    expect(doc.headers.get('cache-control')).toBeNull();
    expect(doc.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it.each([
    ['at the top level', '{"amount_brl": 1.00, "amount_brl": 1000.00', 'amount_brl'],
    ['spelt with an escape', '{"amount_brl": 1.00, "amount\\u005fbrl": 1000.00', 'amount_brl'],
  ])('refuses a body with a repeated member %s: 400', async (_case, head, name) => {
    const rest = `, "receiver_wallet": "${VALID_PAYOUT.receiver_wallet}", "pix_key": "${VALID_PAYOUT.pix_key}", "pix_key_type": "CPF"}`;
    const res = await post(stack.apiUrl, apiKey, head + rest);
    expectError(res, 400, `invalid JSON body: member "${name}" appears more than once in one object`);
    expectPrivate(res);
  });

  it('refuses a repeated member on every JSON route, webhooks included', async () => {
    const res = await call(stack.apiUrl, '/webhooks/sandbox', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"token": "a", "token": "b"}',
    });
    expectError(res, 400, 'invalid JSON body: member "token" appears more than once in one object');
  });

  it('the served document forbids the zero address and an empty created_at[gte], which the server refuses', async () => {
    const doc = (await (await fetch(`${stack.apiUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, any>>; // eslint-disable-line @typescript-eslint/no-explicit-any
      components: unknown;
    };
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema({ $id: 'openapi.json', components: doc.components });
    const local = (schema: unknown) =>
      ajv.compile(
        JSON.parse(
          JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/'),
        ) as object,
      );
    const body = local(doc.paths['/v1/payouts']!.post.requestBody.content['application/json'].schema);
    expect(body({ ...VALID_PAYOUT })).toBe(true);
    expect(body({ ...VALID_PAYOUT, receiver_wallet: ZERO_ADDRESS })).toBe(false);
    expectError(
      await post(stack.apiUrl, apiKey, { ...VALID_PAYOUT, receiver_wallet: ZERO_ADDRESS }),
      400,
      'receiver_wallet must not be the zero address',
    );

    const gte = (doc.paths['/v1/payouts']!.get.parameters as { name: string; schema: unknown }[]).find(
      (p) => p.name === 'created_at[gte]',
    )!;
    const param = local(gte.schema);
    expect(param('2026-01-31T00:00:00Z')).toBe(true);
    expect(param('')).toBe(false);
    expect(param('2026-02-30T00:00:00Z')).toBe(false);
    const empty = await call(stack.apiUrl, '/v1/payouts?created_at[gte]=', {
      headers: { 'x-api-key': apiKey },
    });
    expect(empty.status).toBe(400);
  });
});
