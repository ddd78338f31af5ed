import fc from 'fast-check';
import { useStack, VALID_PAYOUT } from '../support/stack';
import {
  call,
  expectErrorBody,
  parseRawResponse,
  parseRawResponses,
  rawRequest,
  type ApiResponse,
} from './helpers';

// Property-based: whatever a client sends, the api never answers 5xx, and every non-2xx answer is
// exactly {"error": string}. Runs against the real stack; the partner's limits are lifted so the
// limiter is not what answers.
const RUNS = 100;

describe('api properties (fast-check, real stack)', () => {
  const stack = useStack({
    env: { POST_RATE_LIMIT_PER_MINUTE: '1000000', READ_RATE_LIMIT_PER_MINUTE: '1000000' },
  });
  let apiKey: string;

  beforeAll(async () => {
    ({ apiKey } = await stack.createPartner('properties'));
  });

  function expectContract(res: Pick<ApiResponse, 'status' | 'json' | 'text'>): void {
    expect(res.status).toBeLessThan(500);
    if (res.status >= 300) expectErrorBody(res);
  }

  // Header values a fetch client can put on the wire: visible latin-1, no leading/trailing space.
  const headerValue = fc
    .string({ unit: fc.integer({ min: 0x21, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 300 })
    .filter((s) => !/[\x7f]/.test(s));
  // Mostly the partner's valid key, so most requests get past authentication to the rules behind it.
  const apiKeyHeader = fc.oneof(
    { arbitrary: fc.constant('valid'), weight: 8 },
    { arbitrary: fc.constant(undefined), weight: 1 },
    { arbitrary: headerValue, weight: 1 },
  );
  const contentType = fc.oneof(
    { arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8'), weight: 8 },
    { arbitrary: fc.constant(undefined), weight: 1 },
    {
      arbitrary: fc.constantFrom('text/plain', 'application/xml', 'application/x-www-form-urlencoded', '*/*'),
      weight: 1,
    },
    { arbitrary: headerValue, weight: 1 },
  );

  const idempotencyKeyHeader = fc.oneof(
    { arbitrary: fc.constant(undefined), weight: 3 },
    {
      arbitrary: fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)) }),
      weight: 1,
    },
    { arbitrary: headerValue, weight: 1 },
  );

  // Values near the valid ones as well as anything JSON can hold.
  const fieldValue = fc.oneof(
    fc.jsonValue(),
    fc.double(),
    fc.double({ min: -1, max: 200_000 }),
    fc.integer(),
    fc.constantFrom('CPF', 'cnpj', 'Email', 'PHONE', 'random', '', ' '),
    fc.constantFrom(...Object.values(VALID_PAYOUT)),
    fc.string(),
    fc.string({ unit: 'binary' }),
  );
  const payoutLike = fc.record(
    {
      amount_brl: fieldValue,
      receiver_wallet: fieldValue,
      pix_key: fieldValue,
      pix_key_type: fieldValue,
    },
    { requiredKeys: [] },
  );
  const body = fc.oneof(
    payoutLike.map((b) => JSON.stringify(b)),
    // Valid bodies with random amounts: these create payouts, whose shape is checked too.
    fc
      .integer({ min: 6, max: 10_000_000 })
      .map((centavos) => JSON.stringify({ ...VALID_PAYOUT, amount_brl: centavos / 100 })),
    // A valid body with one field replaced: reaches the deeper rules (formats, minimum quote).
    fc
      .tuple(fc.constantFrom('amount_brl', 'receiver_wallet', 'pix_key', 'pix_key_type'), fieldValue)
      .map(([field, value]) => JSON.stringify({ ...VALID_PAYOUT, [field]: value })),
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc.string(),
    fc.string({ unit: 'binary', maxLength: 2000 }),
    fc.constant(''),
  );

  it('POST /v1/payouts: random bodies and headers never give 5xx, errors have the error shape', async () => {
    await fc.assert(
      fc.asyncProperty(
        body,
        apiKeyHeader,
        contentType,
        idempotencyKeyHeader,
        async (payload, key, type, idempotencyKey) => {
          const headers: Record<string, string> = {};
          if (key !== undefined) headers['x-api-key'] = key === 'valid' ? apiKey : key;
          if (type !== undefined) headers['content-type'] = type;
          if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
          const res = await call(stack.apiUrl, '/v1/payouts', { method: 'POST', headers, body: payload });
          expectContract(res);
          if (res.status === 201) {
            expect(res.json).toMatchObject({
              status: expect.any(String),
              pix_copy_paste: expect.any(String),
            });
            // A reused random Idempotency-Key replays an earlier payout, with its own amount.
            if (res.headers.get('idempotent-replayed') === null) {
              expect(res.json).toMatchObject({
                amount_brl: (JSON.parse(payload) as { amount_brl: number }).amount_brl,
              });
            }
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('GET /v1/payouts/{id}: random ids and keys never give 5xx, errors have the error shape', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.uuid(), fc.string(), fc.string({ unit: 'binary', maxLength: 300 })),
        apiKeyHeader,
        async (id, key) => {
          const headers: Record<string, string> = {};
          if (key !== undefined) headers['x-api-key'] = key === 'valid' ? apiKey : key;
          const res = await call(stack.apiUrl, `/v1/payouts/${encodeURIComponent(id)}`, { headers });
          expectContract(res);
          expect([200, 401, 404]).toContain(res.status);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('random methods and paths never give 5xx, errors have the error shape', async () => {
    const segment = fc.oneof(
      fc.constantFrom('v1', 'payouts', 'webhooks', 'sandbox', '..', '.', '%2e', '%zz', '%', ''),
      fc.string({ unit: fc.constantFrom(..."abcXYZ019-._~%!$&'()*+,;=:@".split('')), maxLength: 12 }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'),
        fc.array(segment, { maxLength: 5 }),
        fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
        async (method, segments, query) => {
          const target = `/${segments.join('/')}${query === undefined ? '' : `?${encodeURIComponent(query)}`}`;
          const raw = await rawRequest(
            stack.apiUrl,
            `${method} ${target} HTTP/1.1\r\nHost: x\r\nX-API-Key: ${apiKey}\r\n` +
              `Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
          );
          const res = parseRawResponse(raw);
          expect(res.status).toBeLessThan(500);
          if (res.status >= 300 && method !== 'HEAD') expectErrorBody(res);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('random bytes in the request head never give 5xx, errors have the error shape', async () => {
    // A well-formed last request that closes the connection: whatever the junk did (a request, part
    // of one, nothing but empty lines, which HTTP lets precede a request), the server has something
    // to answer and then closes, so every exchange is checked, none passes by saying nothing.
    const last = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 200 }),
        fc.constantFrom('line', 'header', 'value'),
        async (bytes, where) => {
          const junk = Buffer.from(bytes).toString('latin1');
          const head =
            where === 'line'
              ? `${junk}\r\n\r\n`
              : where === 'header'
                ? `GET /v1/payouts/x HTTP/1.1\r\nHost: x\r\n${junk}\r\n\r\n`
                : `GET /v1/payouts/x HTTP/1.1\r\nHost: x\r\nX-API-Key: ${junk}\r\nConnection: close\r\n\r\n`;
          const answers = parseRawResponses(
            await rawRequest(stack.apiUrl, Buffer.from(head + last, 'latin1')),
          );
          expect(answers.length).toBeGreaterThan(0);
          for (const res of answers) {
            expect(res.status).toBeLessThan(500);
            if (res.status >= 300) expectErrorBody(res);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });
});
