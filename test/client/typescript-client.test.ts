import { randomUUID } from 'node:crypto';
import {
  AuthenticationError,
  CallbackVerificationError,
  ConflictError,
  createPayoutsClient,
  NotFoundError,
  RateLimitError,
  RequestFailedError,
  RequestTimeoutError,
  ServiceUnavailableError,
  verifyCallback,
  type PayoutsClientOptions,
} from '../../clients/typescript/src';
import { freePort } from '../../dev/local/infra/ports';
import { startReceiver, type Receiver } from '../callbacks/receiver';
import { useStack, VALID_PAYOUT } from '../support/stack';

// The TypeScript client of clients/typescript against the whole service on real servers
// (docs/decisions.md D67). `attempts` wraps the real fetch only to see what went on the wire.
describe('TypeScript client', () => {
  const stack = useStack({ env: { CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' } });
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(() => receiver?.close());

  /**
   * A client whose requests are recorded: method, path, Idempotency-Key and the status answered.
   * `before` runs before each request goes out (to change the service's state meanwhile).
   */
  function recordingClient(
    opts: Omit<PayoutsClientOptions, 'fetch'>,
    before?: (request: Request, attempt: number) => Promise<void>,
  ) {
    const attempts: { method: string; path: string; key: string | null; status: number }[] = [];
    const client = createPayoutsClient({
      ...opts,
      fetch: async (request) => {
        await before?.(request, attempts.length);
        const response = await fetch(request);
        attempts.push({
          method: request.method,
          path: new URL(request.url).pathname,
          key: request.headers.get('idempotency-key'),
          status: response.status,
        });
        return response;
      },
    });
    return { client, attempts };
  }

  it('creates a payout, follows it to COMPLETED, lists it and verifies its callback', async () => {
    const { apiKey } = await stack.createPartner();
    const { client, attempts } = recordingClient({ baseUrl: stack.apiUrl, apiKey });
    const { secret } = await client.setCallback(receiver.url);
    expect(secret).toMatch(/^whsec_/);

    const payout = await client.createPayout({
      ...VALID_PAYOUT,
      receiver_wallet: VALID_PAYOUT.receiver_wallet,
    });
    expect(payout).toMatchObject({ status: 'PENDING', amount_brl: 100 });
    // No key given: one was generated (a UUID) and sent.
    expect(attempts[1]).toMatchObject({ method: 'POST', path: '/v1/payouts', status: 201 });
    expect(attempts[1]!.key).toMatch(/^[0-9a-f-]{36}$/);

    await stack.pay(payout.pix_copy_paste);
    let current = await client.getPayout(payout.id);
    for (let i = 0; current.status !== 'COMPLETED' && i < 150; i++) {
      await new Promise((r) => setTimeout(r, 200));
      current = await client.getPayout(payout.id);
    }
    expect(current.status).toBe('COMPLETED');

    const [callback] = await receiver.waitFor(1, (r) => r.rawBody.includes(payout.id));
    const verified = verifyCallback(callback!.rawBody, callback!.headers, secret!);
    expect(verified).toEqual({
      id: `evt_${payout.id}_completed`,
      event: expect.objectContaining({ event: 'payout.completed' }),
    });
    expect(() => verifyCallback(callback!.rawBody, callback!.headers, `whsec_${'A'.repeat(43)}=`)).toThrow(
      CallbackVerificationError,
    );

    // Three more payouts: the iterator walks pages of two until the last.
    for (let i = 0; i < 3; i++) await client.createPayout({ ...VALID_PAYOUT });
    const ids: string[] = [];
    for await (const p of client.iteratePayouts({ limit: 2 } as never)) ids.push(p.id);
    expect(ids).toHaveLength(4);
    expect(ids[3]).toBe(payout.id);
    expect(new Set(ids).size).toBe(4);
  }, 120_000);

  it('throws typed errors with the status and the api message', async () => {
    const { apiKey } = await stack.createPartner();
    const client = createPayoutsClient({ baseUrl: stack.apiUrl, apiKey });
    const missing = client.getPayout('00000000-0000-4000-8000-000000000000');
    await expect(missing).rejects.toBeInstanceOf(NotFoundError);
    await expect(missing).rejects.toMatchObject({ status: 404, message: 'payout not found' });
    const stranger = createPayoutsClient({ baseUrl: stack.apiUrl, apiKey: 'pk_live_nope' });
    await expect(stranger.getCallback()).rejects.toMatchObject({
      constructor: AuthenticationError,
      status: 401,
      message: 'invalid API key',
    });
  });

  it('retries 5xx with the same Idempotency-Key and honours Retry-After (capped)', async () => {
    const { apiKey } = await stack.createPartner();
    // This api's quote source is down: POST answers 503 `quote unavailable, retry later`, Retry-After: 5.
    const down = await stack.startApi({}, { quote: () => Promise.reject(new Error('rate source down')) });
    const { client, attempts } = recordingClient({
      baseUrl: down.url,
      apiKey,
      maxRetries: 2,
      maxDelayMs: 20,
    });
    const failed = client.createPayout({ ...VALID_PAYOUT }, { idempotencyKey: 'order-7' });
    await expect(failed).rejects.toBeInstanceOf(ServiceUnavailableError);
    await expect(failed).rejects.toMatchObject({
      status: 503,
      message: 'quote unavailable, retry later',
      retryAfterSeconds: 5,
    });
    expect(attempts).toEqual(
      [1, 2, 3].map(() => ({ method: 'POST', path: '/v1/payouts', key: 'order-7', status: 503 })),
    );
  });

  it('retries 429 and then throws RateLimitError', async () => {
    const { apiKey } = await stack.createPartner();
    const tight = await stack.startApi({ CALLBACK_RATE_LIMIT_PER_MINUTE: 1 });
    const { client, attempts } = recordingClient({
      baseUrl: tight.url,
      apiKey,
      maxRetries: 2,
      maxDelayMs: 20,
    });
    await client.getCallback();
    await expect(client.getCallback()).rejects.toMatchObject({
      constructor: RateLimitError,
      status: 429,
      retryAfterSeconds: 60,
    });
    expect(attempts.map((a) => a.status)).toEqual([200, 429, 429, 429]);
  });

  /** Claims `key` for the partner as a create still in flight does (the api then answers 409). */
  const claimInFlight = (partnerId: string, key: string) =>
    stack.db.query(
      `INSERT INTO idempotency_keys (partner_id, key, payout_id, workflow_id, state, claimed_at, expires_at)
       VALUES ($1, $2, $3, 'payout-in-flight', 'claimed', now(), now() + interval '24 hours')`,
      [partnerId, key, randomUUID()],
    );
  const release = (partnerId: string, key: string) =>
    stack.db.query('DELETE FROM idempotency_keys WHERE partner_id = $1 AND key = $2', [partnerId, key]);

  it('waits out a key in flight (409) with the same generated key, then gets the payout', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const { client, attempts } = recordingClient(
      { baseUrl: stack.apiUrl, apiKey, initialDelayMs: 20, maxRetries: 0 },
      async (request, n) => {
        const key = request.headers.get('idempotency-key')!;
        // Another request of this key is in flight for the first three attempts.
        if (n === 0) await claimInFlight(partnerId, key);
        if (n === 3) await release(partnerId, key);
      },
    );
    const payout = await client.createPayout({ ...VALID_PAYOUT });
    expect(payout.status).toBe('PENDING');
    expect(attempts.map((a) => a.status)).toEqual([409, 409, 409, 201]);
    // One generated key, sent by every attempt (maxRetries 0: waits for a key in flight are apart).
    expect(new Set(attempts.map((a) => a.key)).size).toBe(1);
    expect(attempts[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('gives up on a key still in flight after inFlightRetryMs, and the error carries the key to retry with', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const { client, attempts } = recordingClient(
      { baseUrl: stack.apiUrl, apiKey, initialDelayMs: 20, inFlightRetryMs: 300 },
      async (request, n) => {
        if (n === 0) await claimInFlight(partnerId, request.headers.get('idempotency-key')!);
      },
    );
    const failed = await client.createPayout({ ...VALID_PAYOUT }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failed).toBeInstanceOf(ConflictError);
    const key = attempts[0]!.key;
    expect(failed).toMatchObject({ status: 409, message: 'idempotency conflict', idempotencyKey: key });
    expect(attempts.length).toBeGreaterThan(2);
    expect(attempts.every((a) => a.status === 409 && a.key === key)).toBe(true);

    // Once the key is free, the caller's retry with it gets the payout (not a second one).
    await release(partnerId, key!);
    const retried = await client.createPayout({ ...VALID_PAYOUT }, { idempotencyKey: key! });
    expect(retried.status).toBe('PENDING');
    expect(attempts.at(-1)).toMatchObject({ key, status: 201 });
  });

  describe('against a server that never answers', () => {
    let silent: Receiver;
    beforeAll(async () => {
      silent = await startReceiver(() => 'hang');
    });
    afterAll(() => silent?.close());

    it('ends each attempt at timeoutMs: retried when repeatable, then RequestTimeoutError (with the key)', async () => {
      const client = createPayoutsClient({
        baseUrl: silent.url,
        apiKey: 'pk_test',
        timeoutMs: 150,
        maxRetries: 1,
        initialDelayMs: 10,
      });
      const before = silent.received.length;
      const read = await client.getCallback().then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(read).toBeInstanceOf(RequestTimeoutError);
      expect(read).toMatchObject({ timeoutMs: 150, idempotencyKey: undefined });
      expect(silent.received.length - before).toBe(2);

      const created = await client
        .createPayout({ ...VALID_PAYOUT }, { idempotencyKey: 'order-timeout', timeoutMs: 100 })
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      expect(created).toMatchObject({
        name: 'RequestTimeoutError',
        timeoutMs: 100,
        idempotencyKey: 'order-timeout',
      });
    });

    it("stops a call, retries and waits included, when the caller's signal aborts", async () => {
      // Attempts would wait longer than this test may run: only the signal can end the call.
      const client = createPayoutsClient({ baseUrl: silent.url, apiKey: 'pk_test', timeoutMs: 600_000 });
      const aborted = client.getCallback({ signal: AbortSignal.timeout(200) });
      await expect(aborted).rejects.toMatchObject({ name: 'TimeoutError' });

      const controller = new AbortController();
      controller.abort(new Error('caller gave up'));
      await expect(client.getPayout(randomUUID(), { signal: controller.signal })).rejects.toThrow(
        'caller gave up',
      );
    });

    it('a create with no answer at all (aborted, or the network failed) carries its key and the cause', async () => {
      const client = createPayoutsClient({ baseUrl: silent.url, apiKey: 'pk_test', timeoutMs: 600_000 });
      const controller = new AbortController();
      controller.abort(new Error('caller gave up'));
      const aborted = await client
        .createPayout(VALID_PAYOUT, { idempotencyKey: 'order-7', signal: controller.signal })
        .catch((e: unknown) => e);
      expect(aborted).toBeInstanceOf(RequestFailedError);
      expect(aborted).toMatchObject({ idempotencyKey: 'order-7', cause: { message: 'caller gave up' } });

      // Nothing listens on this port: every attempt fails before any answer.
      const unreachable = createPayoutsClient({
        baseUrl: `http://127.0.0.1:${await freePort()}`,
        apiKey: 'pk_test',
        maxRetries: 1,
        initialDelayMs: 1,
      });
      const failed = await unreachable.createPayout(VALID_PAYOUT).catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(RequestFailedError);
      expect((failed as RequestFailedError).idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    });
  });

  it('pages callback events with has_more and iterates them all', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const client = createPayoutsClient({ baseUrl: stack.apiUrl, apiKey });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const payoutId = randomUUID();
      ids.unshift(`evt_${payoutId}_failed`);
      await stack.db.query(
        `INSERT INTO callback_events (event_id, partner_id, payout_id, event, state, created_at)
         VALUES ($1, $2, $3, 'payout.failed', 'skipped', now() + make_interval(secs => $4))`,
        [ids[0], partnerId, payoutId, i],
      );
    }
    try {
      const first = await client.listCallbackEvents({ limit: 2 });
      expect(first.has_more).toBe(true);
      expect(first.data.map((e) => e.event_id)).toEqual(ids.slice(0, 2));
      const all: string[] = [];
      for await (const e of client.iterateCallbackEvents({ limit: 1 })) all.push(e.event_id);
      expect(all).toEqual(ids);
    } finally {
      // What the test seeded without a workflow, it removes.
      await stack.db.query('DELETE FROM callback_events WHERE event_id = ANY($1)', [ids]);
    }
  });
});
