import { randomUUID } from 'node:crypto';
import { useStack, VALID_PAYOUT } from '../support/stack';
import { call, callFrom, expectError, freshClientAddress, type ApiResponse } from './helpers';

// Failed API-key attempts are throttled per client address, and a valid key is never refused by
// that throttle: a partner sharing an address with a failing client keeps working.
const FAILURES_PER_MINUTE = 3;
const LIMITED = 'rate limit exceeded, retry after 60 seconds';

describe('API-key failures throttled per client address', () => {
  const stack = useStack({ env: { AUTH_FAILURE_LIMIT_PER_MINUTE: String(FAILURES_PER_MINUTE) } });

  const postFrom = (address: string, apiKey: string | undefined) =>
    callFrom(address, stack.apiUrl, '/v1/payouts', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(apiKey === undefined ? {} : { 'x-api-key': apiKey }),
      },
      body: JSON.stringify(VALID_PAYOUT),
    });
  const getFrom = (address: string, apiKey: string | undefined, id: string = randomUUID()) =>
    callFrom(address, stack.apiUrl, `/v1/payouts/${id}`, {
      headers: apiKey === undefined ? {} : { 'x-api-key': apiKey },
    });

  function expectThrottled(res: ApiResponse): void {
    expectError(res, 429, LIMITED);
    expect(res.headers.get('retry-after')).toBe('60');
  }

  it('401s spend the address bucket (missing and invalid keys, POST and GET); then failures answer 429', async () => {
    const address = freshClientAddress();
    expectError(await postFrom(address, 'pk_live_guess-1'), 401, 'invalid API key');
    expectError(await getFrom(address, undefined), 401, 'missing X-API-Key header');
    expectError(await getFrom(address, 'pk_live_guess-2'), 401, 'invalid API key');

    expectThrottled(await postFrom(address, 'pk_live_guess-3'));
    expectThrottled(await getFrom(address, undefined));
  });

  it('a valid key still works from a throttled address, and its requests spend no failure token', async () => {
    const { apiKey } = await stack.createPartner();
    const address = freshClientAddress();
    for (let i = 0; i < FAILURES_PER_MINUTE; i += 1) await postFrom(address, `pk_live_guess-${i}`);
    expectThrottled(await postFrom(address, 'pk_live_guess-next'));

    const created = await postFrom(address, apiKey);
    expect(created.status).toBe(201);
    const read = await getFrom(address, apiKey, (created.json as { id: string }).id);
    expect(read.status).toBe(200);
    expectThrottled(await getFrom(address, 'pk_live_guess-after'));
  });

  it("one address's failures leave other addresses alone", async () => {
    const noisy = freshClientAddress();
    for (let i = 0; i <= FAILURES_PER_MINUTE; i += 1) await postFrom(noisy, 'pk_live_guess');
    expectThrottled(await postFrom(noisy, 'pk_live_guess'));
    expectError(await postFrom(freshClientAddress(), 'pk_live_guess'), 401, 'invalid API key');
  });

  it('X-Forwarded-For is ignored unless TRUST_PROXY names the proxy', async () => {
    const address = freshClientAddress();
    for (let i = 0; i < FAILURES_PER_MINUTE; i += 1) await postFrom(address, 'pk_live_guess');
    const spoofed = await callFrom(address, stack.apiUrl, '/v1/payouts', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': freshClientAddress() },
      body: JSON.stringify(VALID_PAYOUT),
    });
    expectThrottled(spoofed);
  });

  describe('behind a proxy (TRUST_PROXY=127.0.0.1)', () => {
    let url: string;

    beforeAll(async () => {
      ({ url } = await stack.startApi({ TRUST_PROXY: '127.0.0.1' }, { providerUrl: null }));
    });

    it("the client's address comes from X-Forwarded-For: one client's failures do not throttle another behind the same proxy", async () => {
      const viaProxy = (client: string) =>
        call(url, '/v1/payouts', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-api-key': 'pk_live_guess',
            'x-forwarded-for': client,
          },
          body: JSON.stringify(VALID_PAYOUT),
        });
      const noisy = `203.0.113.${1 + Math.floor(Math.random() * 250)}`;
      for (let i = 0; i < FAILURES_PER_MINUTE; i += 1)
        expectError(await viaProxy(noisy), 401, 'invalid API key');
      expectThrottled(await viaProxy(noisy));
      expectError(
        await viaProxy(`198.51.100.${1 + Math.floor(Math.random() * 250)}`),
        401,
        'invalid API key',
      );
    });
  });
});
