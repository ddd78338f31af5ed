import { request } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { startStack, type TestStack } from '../support/stack';
import { call, expectError, type ApiResponse } from './helpers';

// POST /webhooks/{provider} against abuse: the provider name is checked before the body is read,
// and new tokens are throttled per client address while a known token is always acknowledged.
// Loopback is a whole /8 on Linux, so 127.0.0.2 is a second client address on the same machine.
const NEW_TOKENS_PER_MINUTE = 3;

describe('provider webhook abuse', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startStack({ env: { WEBHOOK_RATE_LIMIT_PER_MINUTE: String(NEW_TOKENS_PER_MINUTE) } });
  }, 120_000);
  afterAll(() => stack?.close());

  /** POST from a chosen client address. */
  function deliverFrom(localAddress: string, body: string, provider = 'sandbox'): Promise<ApiResponse> {
    const url = new URL(`${stack.apiUrl}/webhooks/${provider}`);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          localAddress,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => {
            let json: unknown;
            try {
              json = JSON.parse(text);
            } catch {
              json = undefined;
            }
            const headers = new Headers();
            for (const [name, value] of Object.entries(res.headers)) {
              if (typeof value === 'string') headers.set(name, value);
            }
            resolve({ status: res.statusCode!, headers, text, json });
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }
  // Buckets live in the test run's shared PostgreSQL: a fresh address per run starts full.
  const freshAddress = () => `127.${[0, 0, 0].map(() => 1 + Math.floor(Math.random() * 250)).join('.')}`;
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
    const address = freshAddress();
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
    expect((await deliverFrom(freshAddress(), tokenBody(junkToken()))).status).toBe(200);
  });
});
