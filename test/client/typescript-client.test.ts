import {
  AuthenticationError,
  CallbackVerificationError,
  createPayoutsClient,
  NotFoundError,
  RateLimitError,
  ServiceUnavailableError,
  verifyCallback,
  type PayoutsClientOptions,
} from '../../clients/typescript/src';
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

  /** A client whose requests are recorded: method, path, Idempotency-Key and the status answered. */
  function recordingClient(opts: Omit<PayoutsClientOptions, 'fetch'>) {
    const attempts: { method: string; path: string; key: string | null; status: number }[] = [];
    const client = createPayoutsClient({
      ...opts,
      fetch: async (request) => {
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
});
