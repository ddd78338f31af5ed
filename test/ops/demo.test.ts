import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { useStack } from '../support/stack';

// `npm run demo` against a real stack (its URLs given by env instead of `npm start`'s fixed ports):
// it previews a quote, creates and pays a payout, fetches its QR image and lists the partner's payouts.
const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);

describe('demo', () => {
  const stack = useStack();

  it('runs a payout to COMPLETED and shows the quote, the QR image and the list', async () => {
    const { apiKey } = await stack.createPartner('demo partner');
    const { stdout } = await run(path.join(ROOT, 'node_modules/.bin/tsx'), ['dev/demo.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DEMO_API_URL: stack.apiUrl,
        DEMO_SANDBOX_URL: stack.sandboxUrl,
        DEMO_API_KEY: apiKey,
        DEMO_TIMEOUT_SECONDS: '60',
      },
      timeout: 90_000,
    });
    const text = stdout.replace(/\x1b\[[0-9;]*m/g, ''); // eslint-disable-line no-control-regex
    expect(text).toMatch(/100\.00 BRL would guarantee at least 17\.152658 USDT/);
    expect(text).toMatch(/qr\.png \(or qr\.svg\): \d+ bytes/);
    expect(text).toMatch(/Done: USDT settled/);
    const id = /payout ([0-9a-f-]{36}): PENDING/.exec(text)?.[1];
    expect(text).toMatch(new RegExp(`${id}\\s+COMPLETED\\s+100\\.00 BRL`));
    // The second payout, cancelled, shows up FAILED in the list next to the completed one.
    const cancelled = /payout ([0-9a-f-]{36}): FAILED; its PIX charge was removed/.exec(text)?.[1];
    expect(cancelled).toBeDefined();
    expect(text).toMatch(new RegExp(`${cancelled}\\s+FAILED\\s+100\\.00 BRL`));
  }, 120_000);
});
