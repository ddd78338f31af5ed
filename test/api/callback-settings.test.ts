import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { createDnsResolver } from '../../src/adapters/callbacks/dns-resolver';
import { closeCallbackEvent } from '../../src/adapters/db/callbacks-repo';
import { partnerCallbacksOf } from '../../src/main/wiring';
import { createLogger } from '../../src/observability/logger';
import { callbackEventId } from '../../src/domain/callback-event';
import { startDnsServer, type DnsServer } from '../support/dns-server';
import { useStack } from '../support/stack';
import { startReceiver, type Receiver, type ReceivedCallback } from '../callbacks/receiver';
import { call, expectError, type ApiResponse } from './helpers';

// /v1/callback: a partner manages its own callback endpoint with its API key (docs/decisions.md
// D65). Real servers throughout: the receiver is a loopback HTTP server (allowed on this stack, as
// a local demo would), and the payout event comes from a payout paid through the sandbox.
describe('partner self-service callbacks', () => {
  const stack = useStack({ env: { CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' } });
  let receiver: Receiver;
  let dns: DnsServer;
  beforeAll(async () => {
    receiver = await startReceiver();
    dns = await startDnsServer({
      records: { 'internal.partner.test': { a: ['10.20.30.40'] } },
      hang: ['slow.partner.test'],
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await dns?.close();
  });

  /** An api whose log lines are kept (as parsed JSON), resolving names with the test's DNS server. */
  async function loggingApi(
    overrides: Parameters<typeof stack.startApi>[0] = {},
  ): Promise<{ url: string; lines: Record<string, unknown>[]; text: () => string }> {
    const raw: string[] = [];
    const logger = createLogger({
      level: 'info',
      name: 'api',
      destination: { write: (line: string) => void raw.push(line) },
    });
    const config = { ...stack.config, ...overrides };
    const callbacks = partnerCallbacksOf(config);
    const resolve = createDnsResolver({ timeoutMs: 300, tries: 1, concurrency: 4, servers: [dns.address] });
    const api = await stack.startApi(overrides, {
      logger,
      callbacks: { ...callbacks, sender: { ...callbacks.sender, resolve } },
    });
    return {
      url: api.url,
      get lines() {
        return raw.map((line) => JSON.parse(line) as Record<string, unknown>);
      },
      text: () => raw.join(''),
    };
  }

  const send = (
    apiKey: string | undefined,
    method: string,
    path: string,
    body?: unknown,
    baseUrl = stack.apiUrl,
  ): Promise<ApiResponse> =>
    call(baseUrl, path, {
      method,
      headers: {
        ...(apiKey === undefined ? {} : { 'x-api-key': apiKey }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  /** Whether `secret` verifies this request as Standard Webhooks libraries do. */
  const verifies = (secret: string, r: ReceivedCallback): boolean => {
    try {
      new Webhook(secret).verify(r.rawBody.toString('utf8'), r.headers as Record<string, string>);
      return true;
    } catch {
      return false;
    }
  };
  const bodyOf = (r: ReceivedCallback) => JSON.parse(r.rawBody.toString('utf8')) as Record<string, unknown>;

  it('refuses every route without a valid API key', async () => {
    const routes: [string, string, unknown?][] = [
      ['GET', '/v1/callback'],
      ['PUT', '/v1/callback', { url: receiver.url }],
      ['DELETE', '/v1/callback'],
      ['POST', '/v1/callback/rotate-secret', {}],
      ['POST', '/v1/callback/test'],
      ['GET', '/v1/callback/events'],
    ];
    for (const [method, path, body] of routes) {
      expectError(await send(undefined, method, path, body), 401, 'missing X-API-Key header');
      expectError(await send('pk_live_nope', method, path, body), 401, 'invalid API key');
    }
  });

  it('sets the URL, tests, rotates with an overlap, and lists a payout event with its attempts', async () => {
    const { apiKey } = await stack.createPartner();
    expect((await send(apiKey, 'GET', '/v1/callback')).json).toEqual({
      url: null,
      previous_secret_valid_until: null,
    });
    expectError(
      await send(apiKey, 'POST', '/v1/callback/test'),
      409,
      'no callback URL is set: set one with PUT /v1/callback first',
    );

    const url = new URL('/partner-a?token=theirs', receiver.url).href;
    const set = await send(apiKey, 'PUT', '/v1/callback', { url });
    expect(set.status).toBe(200);
    const { secret } = set.json as { url: string; secret: string };
    expect(set.json).toEqual({ url, secret: expect.stringMatching(/^whsec_/) });
    // A second PUT moves the endpoint and keeps the secret receivers check.
    expect((await send(apiKey, 'PUT', '/v1/callback', { url })).json).toEqual({ url });

    const tested = await send(apiKey, 'POST', '/v1/callback/test');
    expect(tested.json).toEqual({
      event_id: expect.stringMatching(/^evt_test_/),
      delivered: true,
      status_code: 200,
      error: null,
      duration_ms: expect.any(Number),
    });
    const [test] = await receiver.waitFor(1, (r) => r.path.startsWith('/partner-a'));
    expect(bodyOf(test!)).toEqual({ event: 'callback.test', created_at: expect.any(String) });
    expect(test!.headers['webhook-id']).toBe((tested.json as { event_id: string }).event_id);
    expect(verifies(secret, test!)).toBe(true);

    const rotated = await send(apiKey, 'POST', '/v1/callback/rotate-secret', { overlap_seconds: 3600 });
    expect(rotated.status).toBe(200);
    const { secret: next, previous_secret_valid_until: until } = rotated.json as {
      secret: string;
      previous_secret_valid_until: string;
    };
    expect(next).not.toBe(secret);
    expect(Date.parse(until) - Date.now()).toBeGreaterThan(3500_000);
    expect((await send(apiKey, 'GET', '/v1/callback')).json).toEqual({
      url,
      previous_secret_valid_until: until,
    });
    await send(apiKey, 'POST', '/v1/callback/test');
    const [, during] = await receiver.waitFor(2, (r) => r.path.startsWith('/partner-a'));
    // During the overlap each secret verifies: the receiver deploys the new one at its own pace.
    expect([verifies(secret, during!), verifies(next, during!)]).toEqual([true, true]);

    const { payout } = await stack.createPayout(apiKey);
    await stack.pay(payout.pix_copy_paste);
    await stack.waitForStatus(apiKey, payout.id, ['COMPLETED']);
    const [, , completed] = await receiver.waitFor(3, (r) => r.path.startsWith('/partner-a'));
    expect(bodyOf(completed!)).toMatchObject({ event: 'payout.completed', payout: { id: payout.id } });
    // Test events are not part of the log: only the payout's.
    const events = await deliveredFirst(() => send(apiKey, 'GET', '/v1/callback/events?limit=5'));
    expect(events).toEqual({
      data: [
        {
          event_id: `evt_${payout.id}_completed`,
          payout_id: payout.id,
          event: 'payout.completed',
          state: 'delivered',
          attempt_count: 1,
          created_at: expect.any(String),
          updated_at: expect.any(String),
          attempts: [
            {
              attempt: 1,
              started_at: expect.any(String),
              duration_ms: expect.any(Number),
              url: new URL('/partner-a', receiver.url).href,
              status_code: 200,
              error: null,
              response_excerpt: 'ok',
            },
          ],
        },
      ],
      has_more: false,
    });

    // Another partner sees none of it.
    const other = await stack.createPartner();
    expect((await send(other.apiKey, 'GET', '/v1/callback')).json).toEqual({
      url: null,
      previous_secret_valid_until: null,
    });
    expect((await send(other.apiKey, 'GET', '/v1/callback/events')).json).toEqual({
      data: [],
      has_more: false,
    });

    expect((await send(apiKey, 'DELETE', '/v1/callback')).json).toEqual({
      url: null,
      previous_secret_valid_until: null,
    });
    expectError(await send(apiKey, 'POST', '/v1/callback/rotate-secret', {}), 409);
  }, 120_000);

  /** The delivery's record is written by the worker a moment after the receiver answered. */
  async function deliveredFirst(read: () => Promise<ApiResponse>): Promise<unknown> {
    for (let i = 0; ; i++) {
      const res = await read();
      const data = (res.json as { data?: { state: string }[] }).data;
      if (data?.[0]?.state === 'delivered' || i > 50) return res.json;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it('refuses URLs the sender would refuse, and invalid bodies, with the api error body', async () => {
    const { apiKey } = await stack.createPartner();
    // This api runs as production does: no private networks.
    const strict = await stack.startApi({ CALLBACK_ALLOW_PRIVATE_NETWORKS: false });
    for (const url of ['http://127.0.0.1:9/cb', 'https://10.1.2.3/cb', 'https://169.254.169.254/latest']) {
      const res = await send(apiKey, 'PUT', '/v1/callback', { url }, strict.url);
      expectError(res, 400, 'url refused: callback URL must resolve to a public address');
    }
    expectError(
      await send(apiKey, 'PUT', '/v1/callback', { url: 'https://u:p@partner.example/cb' }, strict.url),
      400,
      'url refused: callback URL must not carry credentials; the signature authenticates us',
    );
    expectError(await send(apiKey, 'PUT', '/v1/callback', {}), 400, 'url is required');
    expectError(
      await send(apiKey, 'PUT', '/v1/callback', { url: 'ftp://partner.example/' }),
      400,
      'url must be an https URL',
    );
    expectError(
      await send(apiKey, 'GET', '/v1/callback/events?limit=0'),
      400,
      'limit must be a whole number from 1 to 100',
    );
    await send(apiKey, 'PUT', '/v1/callback', { url: receiver.url });
    expectError(
      await send(apiKey, 'POST', '/v1/callback/rotate-secret', { overlap_seconds: 31 * 86_400 }),
      400,
      'overlap_seconds must be a whole number from 0 to 2592000',
    );
    expect((await send(apiKey, 'GET', '/v1/callback')).json).toEqual({
      url: receiver.url,
      previous_secret_valid_until: null,
    });
  });

  it('tells partners why a URL is refused without internals; the log line has them', async () => {
    const { apiKey } = await stack.createPartner();
    const api = await loggingApi({ CALLBACK_ALLOW_PRIVATE_NETWORKS: false });
    const refused = await send(
      apiKey,
      'PUT',
      '/v1/callback',
      { url: 'https://internal.partner.test/cb' },
      api.url,
    );
    expectError(refused, 400, 'url refused: callback URL must resolve to a public address');
    expect(refused.text).not.toMatch(/10\.20\.30\.40|CALLBACK_|private/);
    expect(api.lines).toContainEqual(
      expect.objectContaining({
        msg: 'partner callback url refused',
        host: 'internal.partner.test',
        detail: expect.stringMatching(/private address, 10\.20\.30\.40.*CALLBACK_ALLOW_PRIVATE_NETWORKS/),
      }),
    );

    // A URL set where private networks are allowed (an operator's demo), tested where they are not:
    // the test event's answer names no address either.
    const lenient = await loggingApi({ CALLBACK_ALLOW_PRIVATE_NETWORKS: true });
    const url = 'https://internal.partner.test/cb';
    expect((await send(apiKey, 'PUT', '/v1/callback', { url }, lenient.url)).status).toBe(200);
    const tested = await send(apiKey, 'POST', '/v1/callback/test', undefined, api.url);
    expect(tested.json).toMatchObject({
      delivered: false,
      status_code: null,
      error: 'refused: callback URL must resolve to a public address',
    });
    expect(api.lines).toContainEqual(
      expect.objectContaining({
        msg: 'partner test callback refused',
        detail: expect.stringMatching(/10\.20\.30\.40/),
      }),
    );
  });

  it('a host whose DNS does not answer in time is a 503 to retry, and changes nothing', async () => {
    const { apiKey } = await stack.createPartner();
    const api = await loggingApi();
    await send(apiKey, 'PUT', '/v1/callback', { url: receiver.url }, api.url);
    const slow = await send(apiKey, 'PUT', '/v1/callback', { url: 'https://slow.partner.test/cb' }, api.url);
    expectError(slow, 503, 'callback URL host could not be resolved now, retry later');
    expect(slow.headers.get('retry-after')).toBe('5');
    expect((await send(apiKey, 'GET', '/v1/callback', undefined, api.url)).json).toMatchObject({
      url: receiver.url,
    });
    expect(api.lines).toContainEqual(
      expect.objectContaining({
        msg: 'partner callback url refused',
        detail: expect.stringMatching(/^slow\.partner\.test could not be resolved now/),
      }),
    );
  });

  it('refuses a rotation with an overlap while another overlap runs (409 with its end); 0 ends every old secret', async () => {
    const { apiKey } = await stack.createPartner();
    const url = new URL('/partner-r', receiver.url).href;
    const { secret: first } = (await send(apiKey, 'PUT', '/v1/callback', { url })).json as { secret: string };
    const rotated = await send(apiKey, 'POST', '/v1/callback/rotate-secret', { overlap_seconds: 3600 });
    const { secret: second, previous_secret_valid_until: until } = rotated.json as {
      secret: string;
      previous_secret_valid_until: string;
    };

    expectError(
      await send(apiKey, 'POST', '/v1/callback/rotate-secret', { overlap_seconds: 60 }),
      409,
      `the previous secret rotation's overlap lasts until ${until}: rotate again after it ends, or with overlap_seconds 0 to end every replaced secret at once`,
    );
    // Nothing changed: both secrets still sign, and the overlap's end is the same.
    expect((await send(apiKey, 'GET', '/v1/callback')).json).toEqual({
      url,
      previous_secret_valid_until: until,
    });
    await send(apiKey, 'POST', '/v1/callback/test');
    const [during] = await receiver.waitFor(1, (r) => r.path === '/partner-r');
    expect([verifies(first, during!), verifies(second, during!)]).toEqual([true, true]);

    // Without an overlap (a leaked secret) the rotation goes ahead: only the new secret signs.
    const now = await send(apiKey, 'POST', '/v1/callback/rotate-secret', { overlap_seconds: 0 });
    expect(now.status).toBe(200);
    const { secret: third } = now.json as { secret: string };
    await send(apiKey, 'POST', '/v1/callback/test');
    const [, after] = await receiver.waitFor(2, (r) => r.path === '/partner-r');
    expect([first, second, third].map((s) => verifies(s, after!))).toEqual([false, false, true]);
    // No overlap runs any more: one with an overlap is accepted again.
    expect((await send(apiKey, 'POST', '/v1/callback/rotate-secret', { overlap_seconds: 60 })).status).toBe(
      200,
    );
  });

  it('rotate-secret takes no body at all, as it takes {}', async () => {
    const { apiKey } = await stack.createPartner();
    await send(apiKey, 'PUT', '/v1/callback', { url: receiver.url });
    // No content-type, no body (`curl -X POST .../rotate-secret`).
    const bare = await call(stack.apiUrl, '/v1/callback/rotate-secret', {
      method: 'POST',
      headers: { 'x-api-key': apiKey },
    });
    expect({ status: bare.status, body: bare.json }).toEqual({
      status: 200,
      body: { secret: expect.stringMatching(/^whsec_/), previous_secret_valid_until: null },
    });
    const empty = await send(apiKey, 'POST', '/v1/callback/rotate-secret', {});
    expect(empty.json).toEqual({
      secret: expect.stringMatching(/^whsec_/),
      previous_secret_valid_until: null,
    });
    // A body that is sent is still read as one.
    expectError(
      await call(stack.apiUrl, '/v1/callback/rotate-secret', {
        method: 'POST',
        headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
        body: 'null',
      }),
      400,
      'request body must be a JSON object',
    );
  });

  it('pages the events as GET /v1/payouts does: limit, starting_after, has_more', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    // Seven events written as the delivery activities write them; two share one instant, which
    // event_id orders.
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const payoutId = randomUUID();
      const eventId = callbackEventId(payoutId, 'payout.completed');
      await closeCallbackEvent(
        stack.db,
        { eventId, partnerId, payoutId, event: 'payout.completed' },
        'skipped',
      );
      ids.push(eventId);
    }
    const tied = [randomUUID(), randomUUID()].map((p) => callbackEventId(p, 'payout.failed')).sort();
    await stack.db.query(
      `INSERT INTO callback_events (event_id, partner_id, payout_id, event, state, created_at)
       SELECT e, $2, split_part(e, '_', 2)::uuid, 'payout.failed', 'skipped', now() + interval '1 minute'
         FROM unnest($1::text[]) AS e`,
      [tied, partnerId],
    );
    // What the test seeded without a workflow, it removes.
    const seeded = [...ids, ...tied];
    try {
      // Newest first: the tied pair (by event_id, descending), then the five, newest first.
      const expected = [...tied.reverse(), ...ids.reverse()];

      const seen: string[] = [];
      const pages: boolean[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await send(
          apiKey,
          'GET',
          `/v1/callback/events?limit=3${after ? `&starting_after=${after}` : ''}`,
        );
        expect(page.status).toBe(200);
        const { data, has_more } = page.json as { data: { event_id: string }[]; has_more: boolean };
        seen.push(...data.map((e) => e.event_id));
        pages.push(has_more);
        if (!has_more) break;
        after = data.at(-1)!.event_id;
      }
      expect(seen).toEqual(expected);
      expect(pages).toEqual([true, true, false]);

      // The default page is 20; a cursor that is not one of the caller's events is refused.
      expect((await send(apiKey, 'GET', '/v1/callback/events')).json).toMatchObject({ has_more: false });
      const other = await stack.createPartner();
      for (const cursor of [ids[0]!, callbackEventId(randomUUID(), 'payout.failed'), 'evt_nope'])
        expectError(
          await send(other.apiKey, 'GET', `/v1/callback/events?starting_after=${cursor}`),
          400,
          'starting_after must be the id of one of your callback events',
        );
      expectError(
        await send(apiKey, 'GET', `/v1/callback/events?starting_after=${ids[0]}&starting_after=${ids[1]}`),
        400,
        'starting_after must be given once',
      );
    } finally {
      await stack.db.query('DELETE FROM callback_events WHERE event_id = ANY($1)', [seeded]);
    }
  });

  it('logs one audit line per change: partner, action, URL host and request id, never the secret', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const api = await loggingApi();
    const url = new URL('/hooks/payouts?token=partner-own-token', receiver.url).href;
    const host = new URL(url).host;
    const asked = async (method: string, path: string, body?: unknown) => {
      const res = await call(api.url, path, {
        method,
        headers: {
          'x-api-key': apiKey,
          'x-request-id': `audit-${method}-${randomUUID().slice(0, 8)}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(res.status).toBe(200);
      return res;
    };
    const set = await asked('PUT', '/v1/callback', { url });
    const rotated = await asked('POST', '/v1/callback/rotate-secret', { overlap_seconds: 60 });
    await asked('GET', '/v1/callback');
    await asked('POST', '/v1/callback/test');
    const deleted = await asked('DELETE', '/v1/callback');

    const audits = api.lines.filter((l) => l.audit === 'partner_callback');
    expect(audits).toEqual(
      [
        [set, 'set'],
        [rotated, 'rotate-secret'],
        [deleted, 'delete'],
      ].map(([res, action]) =>
        expect.objectContaining({
          level: 30,
          partnerId,
          action,
          host,
          requestId: (res as ApiResponse).headers.get('x-request-id'),
          reqId: (res as ApiResponse).headers.get('x-request-id'),
        }),
      ),
    );
    const secrets = [
      (set.json as { secret: string }).secret,
      (rotated.json as { secret: string }).secret,
    ].map((s) => s.replace(/^whsec_/, ''));
    for (const secret of secrets) expect(api.text()).not.toContain(secret);
    expect(api.text()).not.toContain('partner-own-token');
  });
});
