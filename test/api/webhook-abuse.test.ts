import { createHash, randomBytes } from 'node:crypto';
import { useStack } from '../support/stack';
import { call, callFrom, expectError, freshClientAddress } from './helpers';

// POST /webhooks/{provider} against abuse: the provider name is checked before the body is read,
// and new tokens are throttled per client address while a known token is always acknowledged.
const NEW_TOKENS_PER_MINUTE = 3;

describe('provider webhook abuse', () => {
  const stack = useStack({ env: { WEBHOOK_RATE_LIMIT_PER_MINUTE: String(NEW_TOKENS_PER_MINUTE) } });

  const deliverFrom = (localAddress: string, body: string, provider = 'sandbox') =>
    callFrom(localAddress, stack.apiUrl, `/webhooks/${provider}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
  const junkToken = () => `junk-${randomBytes(8).toString('hex')}`;
  const tokenBody = (token: string) => JSON.stringify({ token });

  describe('an unknown provider is 404 "unknown provider" whatever the body', () => {
    it.each([
      ['malformed JSON', 'application/json', '{"token": '],
      ['an empty body', 'application/json', ''],
      ['a wrong content-type', 'text/plain', 'hello'],
      ['a body over 16 KiB', 'application/json', JSON.stringify({ token: 'x'.repeat(20_000) })],
      ['a valid body', 'application/json', '{"token":"abc"}'],
    ])('%s', async (_what, contentType, body) => {
      const res = await call(stack.apiUrl, '/webhooks/not-our-provider', {
        method: 'POST',
        headers: { 'content-type': contentType },
        body,
      });
      expectError(res, 404, 'unknown provider');
    });
  });

  it('new tokens are throttled per client address; a known token is never throttled; other addresses are unaffected', async () => {
    const address = freshClientAddress();
    const known = junkToken();
    expect((await deliverFrom(address, tokenBody(known))).status).toBe(200);
    for (let i = 1; i < NEW_TOKENS_PER_MINUTE; i += 1) {
      expect((await deliverFrom(address, tokenBody(junkToken()))).status).toBe(200);
    }

    const throttled = junkToken();
    const refused = await deliverFrom(address, tokenBody(throttled));
    expectError(refused, 429, 'rate limit exceeded, retry after 60 seconds');
    expect(refused.headers.get('retry-after')).toBe('60');
    // Refused before anything was recorded: the provider's retry of it is a first delivery.
    const { rowCount } = await stack.db.query('SELECT 1 FROM webhook_tokens WHERE token = $1', [
      createHash('sha256').update(throttled).digest('hex'),
    ]);
    expect(rowCount).toBe(0);

    // The known token, redelivered from the throttled address: acknowledged, as many times as sent.
    for (let i = 0; i < 3; i += 1) {
      const again = await deliverFrom(address, tokenBody(known));
      expect({ status: again.status, body: again.json }).toEqual({ status: 200, body: { received: true } });
    }
    // Another client address has its own bucket.
    expect((await deliverFrom(freshClientAddress(), tokenBody(junkToken()))).status).toBe(200);
  });
});
