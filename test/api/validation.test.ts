import { createPool, type Db } from '../../src/adapters/db/pool';
import { freePort } from '../../dev/local/infra/ports';
import { useStack, VALID_PAYOUT } from '../support/stack';
import { call, expectError, parseRawResponse, post, rawRequest, type ApiResponse } from './helpers';

// Every validation rule of POST /v1/payouts (docs/api.md "Validation messages") with its exact
// message, against the real stack. Valid cases create real payouts through the workflow.
describe('POST /v1/payouts validation', () => {
  // Well over a hundred requests from one partner: the rate limit is not what is under test here.
  const stack = useStack({ env: { POST_RATE_LIMIT_PER_MINUTE: '100000' } });
  let apiKey: string;

  beforeAll(async () => {
    ({ apiKey } = await stack.createPartner('validation'));
  });

  const send = (body: unknown, headers: Record<string, string> = {}) =>
    post(stack.apiUrl, apiKey, body, headers);
  const without = (field: keyof typeof VALID_PAYOUT) => {
    const body: Record<string, unknown> = { ...VALID_PAYOUT };
    delete body[field];
    return body;
  };

  describe('required fields', () => {
    it.each(['amount_brl', 'receiver_wallet', 'pix_key', 'pix_key_type'] as const)(
      'missing %s -> 400 "<field> is required"',
      async (field) => {
        expectError(await send(without(field)), 400, `${field} is required`);
      },
    );

    it('names the first missing field when all are missing', async () => {
      expectError(await send({}), 400, 'amount_brl is required');
    });

    it.each([
      ['amount_brl', '100', 'number'],
      ['amount_brl', null, 'number'],
      ['amount_brl', true, 'number'],
      ['amount_brl', [100], 'number'],
      ['amount_brl', { value: 100 }, 'number'],
      ['receiver_wallet', 123, 'string'],
      ['receiver_wallet', null, 'string'],
      ['pix_key', 12345678901, 'string'],
      ['pix_key', ['12345678901'], 'string'],
      ['pix_key_type', 1, 'string'],
      ['pix_key_type', false, 'string'],
    ])('%s = %j (wrong JSON type) -> 400 "<field> must be a %s"', async (field, value, type) => {
      expectError(await send({ ...VALID_PAYOUT, [field]: value }), 400, `${field} must be a ${type}`);
    });
  });

  describe('amount_brl', () => {
    it.each([
      [0, 'amount_brl must be > 0'],
      [-0, 'amount_brl must be > 0'],
      [-1, 'amount_brl must be > 0'],
      [-0.01, 'amount_brl must be > 0'],
      [-0.001, 'amount_brl must be > 0'],
      [1.234, 'amount_brl must have at most 2 decimal places'],
      [0.001, 'amount_brl must have at most 2 decimal places'],
      [1e-7, 'amount_brl must have at most 2 decimal places'],
      [0.1 + 0.2, 'amount_brl must have at most 2 decimal places'],
      [100000.01, 'amount_brl must be at most 100000.00'],
      [1e9, 'amount_brl must be at most 100000.00'],
    ])('%p -> 400 %p', async (amount, message) => {
      expectError(await send({ ...VALID_PAYOUT, amount_brl: amount }), 400, message);
    });

    it.each([
      ['1e400', 'amount_brl must be at most 100000.00'],
      ['-1e400', 'amount_brl must be > 0'],
    ])('%s (beyond a double: Infinity once parsed) -> 400 %p', async (literal, message) => {
      const body = JSON.stringify(VALID_PAYOUT).replace('"amount_brl":100', `"amount_brl":${literal}`);
      expectError(await send(body), 400, message);
    });

    // JSON.parse reads 10.0000000000000001 as 10: the decimals are judged on the digits sent.
    it.each([
      ['10.001', '10.001'],
      ['10.0000000000000001', '10.0000000000000001'],
      ['1e-7', '1e-7'],
      ['100.0000000000000000001', '100.0000000000000000001'],
    ])('%s as written in the body -> 400, never a rounded amount', async (_what, literal) => {
      const { partnerId, apiKey: key } = await stack.createPartner('exact amounts');
      const body = JSON.stringify(VALID_PAYOUT).replace('"amount_brl":100', `"amount_brl":${literal}`);
      expectError(await post(stack.apiUrl, key, body), 400, 'amount_brl must have at most 2 decimal places');
      const { rows } = await stack.db.query('SELECT 1 FROM payouts WHERE partner_id = $1', [partnerId]);
      expect(rows).toHaveLength(0);
    });

    it.each([
      [
        'an escaped member name',
        '"amount\\u005fbrl":10.0000000000000001',
        'amount_brl must have at most 2 decimal places',
      ],
      [
        'a repeated member (JSON.parse would keep the last)',
        '"amount_brl":10, "amount_brl": 10.0000000000000001',
        'invalid JSON body: member "amount_brl" appears more than once in one object',
      ],
    ])('%s -> 400, never a rounded amount', async (_what, member, message) => {
      const { partnerId, apiKey: key } = await stack.createPartner('exact amounts');
      const body = JSON.stringify(VALID_PAYOUT).replace('"amount_brl":100', member);
      expectError(await post(stack.apiUrl, key, body), 400, message);
      const { rows } = await stack.db.query('SELECT 1 FROM payouts WHERE partner_id = $1', [partnerId]);
      expect(rows).toHaveLength(0);
    });

    // 0.05 / (5.50 x 1.06) = 0.008576 USDT < 0.01; 0.06 gives 0.010291 (rounded down).
    it('below the minimum quote of 0.01 USDT -> 400 naming amount_brl', async () => {
      expectError(
        await send({ ...VALID_PAYOUT, amount_brl: 0.05 }),
        400,
        'amount_brl is too small: min_amount_usdt must be at least 0.01',
      );
    });

    it.each([
      [0.06, 0.06, 0.010291],
      [100.1, 100.1, 17.169811],
      [100000, 100000, 17152.658662],
      [12.5, 12.5, 2.144082],
    ])('%p is accepted: amount_brl %p, min_amount_usdt %p', async (amount, echoed, minUsdt) => {
      const res = await send({ ...VALID_PAYOUT, amount_brl: amount });
      expect(res.status).toBe(201);
      expect(res.json).toMatchObject({ amount_brl: echoed, min_amount_usdt: minUsdt, status: 'PENDING' });
    });

    it('trailing zeros in the JSON number are not extra decimals (100.10, 1.0e2)', async () => {
      const body = JSON.stringify(VALID_PAYOUT).replace('"amount_brl":100', '"amount_brl":100.100');
      expect((await send(body)).json).toMatchObject({ amount_brl: 100.1 });
      const exp = JSON.stringify(VALID_PAYOUT).replace('"amount_brl":100', '"amount_brl":1.0e2');
      expect((await send(exp)).json).toMatchObject({ amount_brl: 100 });
    });
  });

  describe('pix_key_type', () => {
    it.each([
      ['cpf', '12345678901', 'CPF'],
      ['Cpf', '12345678901', 'CPF'],
      ['cnpj', '12345678000195', 'CNPJ'],
      ['CNPJ', '12ABC34501DE35', 'CNPJ'],
      ['eMaIl', 'payer@example.com', 'EMAIL'],
      ['phone', '+5511987654321', 'PHONE'],
      ['random', '123e4567-e89b-12d3-a456-426614174000', 'RANDOM'],
    ])('%p is accepted and returned as %p', async (type, key, expected) => {
      const res = await send({ ...VALID_PAYOUT, pix_key_type: type, pix_key: key });
      expect(res.status).toBe(201);
      expect(res.json).toMatchObject({ pix_key_type: expected, pix_key: key });
    });

    it('an alphanumeric CNPJ in lower case is accepted and returned upper-case', async () => {
      const res = await send({ ...VALID_PAYOUT, pix_key_type: 'cnpj', pix_key: '12abc34501de35' });
      expect(res.status).toBe(201);
      expect(res.json).toMatchObject({ pix_key_type: 'CNPJ', pix_key: '12ABC34501DE35' });
    });

    it('an alphanumeric CNPJ with a wrong check digit -> 400', async () => {
      expectError(
        await send({ ...VALID_PAYOUT, pix_key_type: 'CNPJ', pix_key: '12ABC34501DE36' }),
        400,
        'pix_key is not a valid CNPJ key',
      );
    });

    it.each(['', 'FOO', 'C PF', ' CPF', 'CPF ', 'emaıl', 'BOLETO'])('%p -> 400', async (type) => {
      expectError(
        await send({ ...VALID_PAYOUT, pix_key_type: type }),
        400,
        'pix_key_type must be one of CPF, CNPJ, EMAIL, PHONE, RANDOM',
      );
    });
  });

  describe('pix_key formats', () => {
    const valid: [string, string][] = [
      ['CPF', '12345678901'],
      ['CPF', '00000000000'],
      ['CNPJ', '12345678000195'],
      ['EMAIL', 'payer@example.com'],
      ['EMAIL', 'First.Last+tag@sub.example.com.br'],
      ['PHONE', '11987654321'],
      ['PHONE', '1187654321'],
      ['PHONE', '+5511987654321'],
      ['PHONE', '+551187654321'],
      ['RANDOM', '123e4567-e89b-12d3-a456-426614174000'],
      ['RANDOM', 'A0B1C2D3-E4F5-A6B7-C8D9-E0F1A2B3C4D5'],
    ];
    it.each(valid)('%s %p is valid and echoed as sent', async (type, key) => {
      const res = await send({ ...VALID_PAYOUT, pix_key_type: type, pix_key: key });
      expect(res.status).toBe(201);
      expect(res.json).toMatchObject({ pix_key: key, pix_key_type: type });
    });

    const invalid: [string, string][] = [
      ['CPF', '1234567890'],
      ['CPF', '123456789012'],
      ['CPF', '123.456.789-01'],
      ['CPF', 'abcdefghijk'],
      ['CPF', ' 12345678901'],
      ['CPF', '１２３４５６７８９０１'],
      ['CPF', '12345678000195'],
      ['CNPJ', '1234567800019'],
      ['CNPJ', '123456780001950'],
      ['CNPJ', '12.345.678/0001-95'],
      ['CNPJ', '12345678901'],
      ['EMAIL', 'not-an-email'],
      ['EMAIL', 'payer@example'],
      ['EMAIL', '@example.com'],
      ['EMAIL', 'payer@'],
      ['EMAIL', 'pay er@example.com'],
      ['EMAIL', 'payer@@example.com'],
      ['EMAIL', 'payer@example..com'],
      ['EMAIL', `${'a'.repeat(66)}@example.com`], // 78 characters, over the DICT limit of 77
      ['PHONE', '119876543'],
      ['PHONE', '119876543210'],
      ['PHONE', '5511987654321'],
      ['PHONE', '+15551234567'],
      ['PHONE', '+55 11 98765-4321'],
      ['PHONE', '(11) 98765-4321'],
      ['PHONE', '+5511987'],
      ['RANDOM', 'not-a-uuid'],
      ['RANDOM', '123e4567e89b12d3a456426614174000'],
      ['RANDOM', '123e4567-e89b-12d3-a456-42661417400g'],
      ['RANDOM', '{123e4567-e89b-12d3-a456-426614174000}'],
    ];
    it.each(invalid)('%s %p -> 400 "pix_key is not a valid <TYPE> key"', async (type, key) => {
      expectError(
        await send({ ...VALID_PAYOUT, pix_key_type: type, pix_key: key }),
        400,
        `pix_key is not a valid ${type} key`,
      );
    });

    it('an empty pix_key -> 400', async () => {
      expectError(await send({ ...VALID_PAYOUT, pix_key: '' }), 400, 'pix_key must not be empty');
    });

    it('checks the key against the upper-cased type', async () => {
      expectError(
        await send({ ...VALID_PAYOUT, pix_key_type: 'cnpj', pix_key: '12345678901' }),
        400,
        'pix_key is not a valid CNPJ key',
      );
    });
  });

  describe('receiver_wallet', () => {
    const checksummed = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
    it.each([
      [
        'not an address',
        'not-a-wallet',
        'receiver_wallet must be an EVM address (0x followed by 40 hex digits)',
      ],
      ['empty', '', 'receiver_wallet must be an EVM address (0x followed by 40 hex digits)'],
      [
        'without 0x',
        checksummed.slice(2),
        'receiver_wallet must be an EVM address (0x followed by 40 hex digits)',
      ],
      [
        'too short',
        checksummed.slice(0, 41),
        'receiver_wallet must be an EVM address (0x followed by 40 hex digits)',
      ],
      [
        'too long',
        `${checksummed}0`,
        'receiver_wallet must be an EVM address (0x followed by 40 hex digits)',
      ],
      [
        'a non-hex digit',
        `${checksummed.slice(0, 41)}g`,
        'receiver_wallet must be an EVM address (0x followed by 40 hex digits)',
      ],
      [
        'surrounding space',
        ` ${checksummed}`,
        'receiver_wallet must be an EVM address (0x followed by 40 hex digits)',
      ],
      ['an ENS name', 'vitalik.eth', 'receiver_wallet must be an EVM address (0x followed by 40 hex digits)'],
      [
        'a bad EIP-55 checksum',
        checksummed.replace('C51812dc', 'c51812dc'),
        'receiver_wallet fails the EIP-55 checksum',
      ],
      ['the zero address', `0x${'0'.repeat(40)}`, 'receiver_wallet must not be the zero address'],
    ])('%s -> 400', async (_what, wallet, message) => {
      expectError(await send({ ...VALID_PAYOUT, receiver_wallet: wallet }), 400, message);
    });

    it.each([
      ['lower case', checksummed.toLowerCase()],
      ['upper case hex digits', `0x${checksummed.slice(2).toUpperCase()}`],
      ['already checksummed', checksummed],
    ])('%s is accepted and returned checksummed', async (_what, wallet) => {
      const res = await send({ ...VALID_PAYOUT, receiver_wallet: wallet });
      expect(res.status).toBe(201);
      expect(res.json).toMatchObject({ receiver_wallet: checksummed });
    });
  });

  describe('body and transport', () => {
    it('ignores unknown fields, including ones that look like internal fields', async () => {
      const res = await send({
        ...VALID_PAYOUT,
        partner_id: '00000000-0000-4000-8000-000000000000',
        status: 'COMPLETED',
        settled_amount_usdt: 1e6,
        partnerId: 'x',
      });
      expect(res.status).toBe(201);
      const body = res.json as Record<string, unknown>;
      expect(body.status).toBe('PENDING');
      expect(body.settled_amount_usdt).toBe(0);
      expect(body.partner_id).not.toBe('00000000-0000-4000-8000-000000000000');
      expect(body).not.toHaveProperty('partnerId');
    });

    it.each([
      ['truncated JSON', '{"amount_brl": 100,'],
      ['not JSON at all', 'amount_brl=100'],
      ['a trailing comma', '{"amount_brl": 100,}'],
      ['single quotes', "{'amount_brl': 100}"],
      ['an empty body', ''],
      ['a prototype-poisoning key', `{"__proto__": {"x": 1}, ${JSON.stringify(VALID_PAYOUT).slice(1)}`],
    ])('%s -> 400 "invalid JSON body"', async (_what, body) => {
      expectError(await send(body), 400, 'invalid JSON body');
    });

    it.each([
      ['an array', '[]'],
      ['an array of the payout', JSON.stringify([VALID_PAYOUT])],
      ['a string', '"hello"'],
      ['a number', '42'],
      ['null', 'null'],
      ['a boolean', 'true'],
    ])('%s as the body -> 400 "request body must be a JSON object"', async (_what, body) => {
      expectError(await send(body), 400, 'request body must be a JSON object');
    });

    it('no body at all -> 400 "request body must be a JSON object"', async () => {
      const res = await call(stack.apiUrl, '/v1/payouts', {
        method: 'POST',
        headers: { 'x-api-key': apiKey },
      });
      expectError(res, 400, 'request body must be a JSON object');
    });

    it('a body over 16 KiB -> 413', async () => {
      const body = JSON.stringify({ ...VALID_PAYOUT, padding: 'x'.repeat(16 * 1024) });
      expectError(await send(body), 413, 'request body too large (limit 16 KiB)');
    });

    it('a body just under 16 KiB is read', async () => {
      const base = JSON.stringify({ ...VALID_PAYOUT, padding: '' });
      const body = base.replace('"padding":""', `"padding":"${'x'.repeat(16 * 1024 - base.length)}"`);
      expect(Buffer.byteLength(body)).toBe(16 * 1024);
      expect((await send(body)).status).toBe(201);
    });

    it.each([
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/xml',
    ])('content-type %s -> 415', async (type) => {
      expectError(
        await send(JSON.stringify(VALID_PAYOUT), { 'content-type': type }),
        415,
        'content-type must be application/json',
      );
    });

    it('content-type application/json with a charset is accepted', async () => {
      const res = await send(VALID_PAYOUT, { 'content-type': 'application/json; charset=utf-8' });
      expect(res.status).toBe(201);
    });

    it.each([
      ['GET', '/'],
      ['GET', '/v1'],
      ['GET', '/v1/payout'],
      ['GET', '/v2/payouts'],
      ['GET', '/v1/payouts/123e4567-e89b-42d3-a456-426614174000/qr.gif'],
      ['POST', '/v1/payout'],
      ['POST', '/v1/payouts/123e4567-e89b-42d3-a456-426614174000/extra'],
    ])('unknown route %s %s -> 404 "not found"', async (method, path) => {
      expectError(
        await call(stack.apiUrl, path, { method, headers: { 'x-api-key': apiKey } }),
        404,
        'not found',
      );
    });

    // Allow lists exactly the methods the path declares, HEAD included where Fastify serves it
    // for a GET route (GET /v1/payouts is the list, so the collection allows GET, HEAD and POST).
    it.each([
      ['PUT', '/v1/payouts', 'GET, HEAD, POST'],
      ['DELETE', '/v1/payouts', 'GET, HEAD, POST'],
      ['DELETE', '/v1/payouts/123e4567-e89b-42d3-a456-426614174000', 'GET, HEAD'],
      ['PATCH', '/v1/payouts/123e4567-e89b-42d3-a456-426614174000', 'GET, HEAD'],
      ['QUERY', '/v1/payouts/123e4567-e89b-42d3-a456-426614174000', 'GET, HEAD'],
      ['GET', '/webhooks/sandbox', 'POST'],
      ['POST', '/v1/quotes', 'GET, HEAD'],
      ['POST', '/v1/payouts/123e4567-e89b-42d3-a456-426614174000/qr.svg', 'GET, HEAD'],
    ])('undeclared method %s %s -> 405 with Allow: %s', async (method, path, allow) => {
      const res = await call(stack.apiUrl, path, { method, headers: { 'x-api-key': apiKey } });
      expectError(res, 405, 'method not allowed');
      expect(res.headers.get('allow')).toBe(allow);
    });

    it.each([
      ['HEAD', '/v1/payouts', 200],
      ['HEAD', '/v1/quotes?amount_brl=10', 200],
      ['HEAD', '/v1/payouts/123e4567-e89b-42d3-a456-426614174000', 404],
    ])('a method that Allow lists is served: %s %s -> %s', async (method, path, status) => {
      const res = await call(stack.apiUrl, path, { method, headers: { 'x-api-key': apiKey } });
      expect(res.status).toBe(status);
    });

    it('an undecodable percent-escape in the path -> 400 with the error shape', async () => {
      const raw = await rawRequest(
        stack.apiUrl,
        `GET /v1/payouts/%E0%A4%A HTTP/1.1\r\nHost: x\r\nX-API-Key: ${apiKey}\r\nConnection: close\r\n\r\n`,
      );
      const res = parseRawResponse(raw);
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ error: 'invalid URL' });
    });

    it('a request the HTTP parser refuses -> 400 with the error shape', async () => {
      const res = parseRawResponse(
        await rawRequest(stack.apiUrl, 'GET /v1/payouts HTTP/1.1\r\nBad Header\r\n\r\n'),
      );
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ error: 'malformed HTTP request' });
    });

    it('headers over the size limit -> 431 with the error shape', async () => {
      const raw = await rawRequest(
        stack.apiUrl,
        `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      );
      const res = parseRawResponse(raw);
      expect(res.status).toBe(431);
      expect(res.json).toEqual({ error: 'request headers too large' });
    });
  });

  describe('with MAX_AMOUNT_BRL configured', () => {
    let url: string;

    beforeAll(async () => {
      ({ url } = await stack.startApi({ MAX_AMOUNT_BRL: '50' }));
    });

    it('one centavo over the maximum -> 400 naming it with 2 decimals', async () => {
      expectError(
        await post(url, apiKey, { ...VALID_PAYOUT, amount_brl: 50.01 }),
        400,
        'amount_brl must be at most 50.00',
      );
    });

    it('exactly the maximum is accepted', async () => {
      const res = await post(url, apiKey, { ...VALID_PAYOUT, amount_brl: 50 });
      expect(res.status).toBe(201);
    });
  });

  describe('when the provider quote fails', () => {
    let url: string;

    beforeAll(async () => {
      // A second api on the same stack whose provider URL is a port nothing listens on.
      const providerUrl = `http://127.0.0.1:${await freePort()}`;
      ({ url } = await stack.startApi({}, { providerUrl }));
    });

    it('a valid POST -> 503 "quote unavailable, retry later", and no payout is created', async () => {
      const { partnerId, apiKey: key } = await stack.createPartner('no quote');
      const res: ApiResponse = await post(url, key, VALID_PAYOUT);
      expectError(res, 503, 'quote unavailable, retry later');
      const { rows } = await stack.db.query('SELECT 1 FROM payouts WHERE partner_id = $1', [partnerId]);
      expect(rows).toHaveLength(0);
    });

    it('validation still answers 400 first', async () => {
      expectError(await post(url, apiKey, { ...VALID_PAYOUT, amount_brl: 0 }), 400, 'amount_brl must be > 0');
    });
  });

  describe('when something unexpected fails (the database is unreachable)', () => {
    let db: Db;
    let url: string;

    beforeAll(async () => {
      db = createPool(`postgres://postgres:password@127.0.0.1:${await freePort()}/none`, 1);
      ({ url } = await stack.startApi({}, { db, providerUrl: null }));
    });
    afterAll(() => db?.end());

    it.each([
      ['POST', () => post(url, apiKey, VALID_PAYOUT)],
      [
        'GET',
        () =>
          call(url, '/v1/payouts/123e4567-e89b-42d3-a456-426614174000', { headers: { 'x-api-key': apiKey } }),
      ],
    ])('%s -> 500 "internal error", nothing of the driver error or a stack', async (_method, send) => {
      const res = await send();
      expectError(res, 500, 'internal error');
      expect(res.text).not.toMatch(/ECONNREFUSED|postgres|127\.0\.0\.1/);
    });
  });
});
