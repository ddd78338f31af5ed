import { loadApiConfig } from '../../src/config';
import { PAYOUT_KEYS } from '../api/helpers';
import { startApi, type RunningApi } from '../support/api';

// The OpenAPI document against docs/api.md: every route, status code, header
// and the error shape. The app is built with lazy connections: serving the document touches neither
// PostgreSQL nor Temporal. (Requests go over HTTP: app.inject's light-my-request loads an ESM-only
// dependency that jest cannot require on Node 20.)

type Json = Record<string, unknown>;
interface Operation {
  operationId?: string;
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string; required?: boolean; schema?: Json }[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Json }> };
  responses: Record<
    string,
    { description: string; headers?: Record<string, Json>; content?: Record<string, { schema: Json }> }
  >;
}

const ERROR_SHAPE = {
  type: 'object',
  properties: { error: expect.objectContaining({ type: 'string', description: expect.any(String) }) },
  required: ['error'],
  additionalProperties: false,
};

describe('OpenAPI document', () => {
  let api: RunningApi;
  let base: string;
  const get = (path: string) => fetch(`${base}${path}`);
  let doc: Json & {
    paths: Record<string, Record<string, Operation>>;
    components: { schemas: Record<string, Json> };
  };

  beforeAll(async () => {
    const config = loadApiConfig({ LOG_LEVEL: 'silent', PUBLIC_BASE_URL: 'https://payouts.example.com' });
    api = await startApi({ config, providerUrl: null });
    base = api.url;
    const res = await get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    doc = (await res.json()) as typeof doc;
  });
  afterAll(() => api?.close());

  /** Follows a local $ref, so shapes compare whether a schema is inline or a component. */
  const resolve = (schema: Json): Json => {
    const ref = schema.$ref;
    if (typeof ref !== 'string') return schema;
    return doc.components.schemas[ref.replace('#/components/schemas/', '')]!;
  };
  const op = (path: string, method: string) => {
    const found = doc.paths[path]?.[method];
    if (!found) throw new Error(`${method.toUpperCase()} ${path} is not in the document`);
    return found;
  };

  it('is OpenAPI 3.1 with the API-key scheme and the public server', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers).toEqual([{ url: 'https://payouts.example.com' }]);
    expect((doc.components as Json).securitySchemes).toEqual({
      ApiKeyAuth: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-Api-Key' }),
    });
  });

  it('has every route of the spec and nothing internal', () => {
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/v1/callback',
      '/v1/callback/events',
      '/v1/callback/rotate-secret',
      '/v1/callback/test',
      '/v1/payouts',
      '/v1/payouts/{id}',
      '/v1/payouts/{id}/cancel',
      '/v1/payouts/{id}/qr.png',
      '/v1/payouts/{id}/qr.svg',
      '/v1/quotes',
      '/webhooks/{provider}',
    ]);
    expect(Object.keys(doc.paths['/v1/payouts']!).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/v1/payouts/{id}']!)).toEqual(['get']);
    expect(Object.keys(doc.paths['/v1/payouts/{id}/cancel']!)).toEqual(['post']);
    expect(Object.keys(doc.paths['/webhooks/{provider}']!)).toEqual(['post']);
    expect(Object.keys(doc.paths['/v1/callback']!).sort()).toEqual(['delete', 'get', 'put']);
  });

  it.each([
    ['/v1/payouts', 'post', ['201', '400', '401', '409', '413', '415', '429', '500', '502', '503']],
    ['/v1/payouts/{id}', 'get', ['200', '401', '404', '429', '500']],
    ['/v1/payouts', 'get', ['200', '400', '401', '429', '500']],
    ['/v1/payouts/{id}/cancel', 'post', ['200', '401', '404', '409', '429', '500', '503']],
    ['/v1/quotes', 'get', ['200', '400', '401', '429', '500', '503']],
    ['/v1/payouts/{id}/qr.svg', 'get', ['200', '304', '401', '404', '410', '429', '500']],
    ['/v1/payouts/{id}/qr.png', 'get', ['200', '304', '401', '404', '410', '429', '500']],
    ['/webhooks/{provider}', 'post', ['200', '400', '404', '413', '415', '500']],
  ])('%s %s documents every status it answers, errors as {"error": string}', (path, method, statuses) => {
    const { responses } = op(path, method);
    expect(Object.keys(responses)).toEqual(expect.arrayContaining(statuses));
    for (const [status, response] of Object.entries(responses)) {
      expect({ status, description: response.description }).toEqual({
        status,
        description: expect.any(String),
      });
      expect(response.description).not.toBe('Default Response');
      expect(response.headers).toHaveProperty('X-Request-Id');
      if (Number(status) >= 400) {
        expect({ status, schema: resolve(response.content!['application/json']!.schema) }).toEqual({
          status,
          schema: ERROR_SHAPE,
        });
      }
    }
  });

  it('documents POST /v1/payouts: key, idempotency, body, 201 with Idempotent-Replayed, 429 with Retry-After', () => {
    const post = op('/v1/payouts', 'post');
    expect(post.security).toEqual([{ ApiKeyAuth: [] }]);
    expect(post.parameters).toContainEqual(
      expect.objectContaining({
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        schema: { type: 'string', pattern: '^[\\x20-\\x7e]{1,255}$' },
      }),
    );
    const body = post.requestBody!.content['application/json']!.schema;
    expect(body.required).toEqual(['amount_brl', 'receiver_wallet', 'pix_key', 'pix_key_type']);
    expect(body.properties).toEqual({
      amount_brl: expect.objectContaining({ type: 'number' }),
      receiver_wallet: expect.objectContaining({ type: 'string' }),
      pix_key: expect.objectContaining({ type: 'string' }),
      pix_key_type: expect.objectContaining({ type: 'string' }),
    });
    const created = post.responses['201']!;
    expect(created.headers).toHaveProperty('Idempotent-Replayed');
    expect(created.description).toMatch(/Idempotent-Replayed: true/);
    expect(resolve(created.content!['application/json']!.schema)).toMatchObject({
      required: expect.arrayContaining(['id', 'status', 'pix_copy_paste', 'min_amount_usdt']),
    });
    expect(post.responses['429']!.headers).toHaveProperty('Retry-After');
    expect(post.responses['409']!.description).toContain('idempotency conflict');
    expect(post.responses['401']!.description).toContain('missing X-API-Key header');
    expect(post.responses['503']!.description).toContain('quote unavailable, retry later');
    expect(post.responses['503']!.description).toContain(
      'quote unavailable: the price feed is stale, retry later',
    );
    expect(post.responses['503']!.headers).toHaveProperty('Retry-After');
    const quotes = op('/v1/quotes', 'get');
    expect(quotes.responses['503']!.description).toContain(
      'quote unavailable: the price feed is stale, retry later',
    );
    expect(quotes.responses['503']!.headers).toHaveProperty('Retry-After');
  });

  it('documents GET /v1/payouts/{id}: key, 200 with the payout, 404 without an existence leak', () => {
    const get = op('/v1/payouts/{id}', 'get');
    expect(get.security).toEqual([{ ApiKeyAuth: [] }]);
    expect(get.parameters).toContainEqual(
      expect.objectContaining({ name: 'id', in: 'path', required: true }),
    );
    const payout = resolve(get.responses['200']!.content!['application/json']!.schema);
    expect(Object.keys(payout.properties as Json).sort()).toEqual(
      [...PAYOUT_KEYS, 'paid_at', 'confirmed_at'].sort(),
    );
    expect(payout.required).not.toContain('paid_at');
    expect((payout.properties as Record<string, Json>).status!.enum).toEqual([
      'PENDING',
      'PROCESSING',
      'COMPLETED',
      'FAILED',
    ]);
    expect(get.responses['404']!.description).toContain('payout not found');
    expect(get.responses['429']!.headers).toHaveProperty('Retry-After');
  });

  it('documents GET /v1/payouts: the filters and cursor, a page of Payouts', () => {
    const list = op('/v1/payouts', 'get');
    expect(list.security).toEqual([{ ApiKeyAuth: [] }]);
    const query = (list.parameters ?? []).filter((p) => p.in === 'query');
    expect(query.map((p) => p.name)).toEqual([
      'limit',
      'starting_after',
      'status',
      'created_at[gte]',
      'created_at[lt]',
    ]);
    for (const p of query) expect(p).toMatchObject({ required: false, description: expect.any(String) });
    // Each schema says exactly what the server takes (JSON Schema has no /i flag: any case is spelt out).
    const schemaOf = (name: string) => query.find((p) => p.name === name)!.schema!;
    expect(schemaOf('limit')).toEqual({ type: 'string', pattern: '^(?:[1-9][0-9]?|100)$' });
    expect(schemaOf('status').pattern).toContain('[Cc][Oo][Mm][Pp][Ll][Ee][Tt][Ee][Dd]');
    expect(schemaOf('starting_after').pattern).toContain('[0-9a-fA-F]{8}');
    const page = resolve(list.responses['200']!.content!['application/json']!.schema);
    expect(page).toMatchObject({
      required: ['data', 'has_more'],
      properties: { data: { type: 'array', items: { $ref: '#/components/schemas/Payout' } } },
    });
  });

  it('documents GET /v1/quotes and the QR images', () => {
    const quote = op('/v1/quotes', 'get');
    expect(quote.parameters).toContainEqual(
      expect.objectContaining({ name: 'amount_brl', in: 'query', required: true }),
    );
    // The amount of the quote is the amount of the payout: the same schema.
    const postBody = op('/v1/payouts', 'post').requestBody!.content['application/json']!.schema;
    expect(quote.parameters!.find((p) => p.name === 'amount_brl')!.schema).toEqual(
      (postBody.properties as Json).amount_brl,
    );
    expect(resolve(quote.responses['200']!.content!['application/json']!.schema)).toMatchObject({
      required: ['amount_brl', 'min_amount_usdt', 'expires_at'],
    });
    for (const [format, mediaType] of [
      ['svg', 'image/svg+xml'],
      ['png', 'image/png'],
    ]) {
      const qr = op(`/v1/payouts/{id}/qr.${format}`, 'get');
      expect(qr.security).toEqual([{ ApiKeyAuth: [] }]);
      expect(Object.keys(qr.responses['200']!.content!)).toEqual([mediaType]);
      expect(qr.responses['200']!.headers).toHaveProperty('ETag');
      expect(qr.responses['410']!.description).toContain('can no longer be paid');
      expect(qr.parameters).toContainEqual(
        expect.objectContaining({ name: 'If-None-Match', in: 'header', required: false }),
      );
    }
  });

  it('documents the provider webhook without partner authentication', () => {
    const webhook = op('/webhooks/{provider}', 'post');
    expect(webhook.security).toEqual([]);
    expect(webhook.requestBody!.content['application/json']!.schema).toMatchObject({
      required: ['token'],
      properties: { token: { type: 'string', pattern: '^[A-Za-z0-9._~-]{1,512}$' } },
    });
    expect(webhook.responses['200']!.content!['application/json']!.schema).toMatchObject({
      properties: { received: { type: 'boolean', enum: [true] } },
    });
  });

  it('serves Swagger UI at /docs from local assets only', async () => {
    const page = await get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThan(2);
    for (const asset of assets) {
      expect(asset).toMatch(/^\/docs\//); // nothing from a CDN
      const res = await get(asset);
      await res.arrayBuffer(); // an unread body would hold its connection open past app.close()
      expect({ asset, status: res.status }).toEqual({ asset, status: 200 });
    }
    const initializer = await (await get('/docs/static/swagger-initializer.js')).text();
    expect(initializer).toContain("resolveUrl('./json')");
    expect(await (await get('/docs/json')).json()).toEqual(doc);
  });
});
