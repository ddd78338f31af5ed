import { Writable } from 'node:stream';
import { createLogger } from '../../src/observability/logger';
import { redactUrls } from '../../src/domain/url-redaction';

// URLs that carry keys (an RPC provider's in the path, a database password, a partner's token) keep
// only their scheme and host in logs and in Temporal's failures.
describe('redactUrls', () => {
  it.each([
    ['URL: https://arb-mainnet.g.alchemy.com/v2/k3y', 'URL: https://arb-mainnet.g.alchemy.com/[redacted]'],
    ['postgres://payouts:s3cret@db:5432/payouts', 'postgres://db:5432/[redacted]'],
    ['postgres://u:pa/ss@db/x', 'postgres://[redacted]'],
    ['(https://partner.example/cb?token=k3y#f)', '(https://partner.example/[redacted])'],
    ['"http://[::1]:8545/k3y"', '"http://[::1]:8545/[redacted]"'],
    ['http://127.0.0.1:8545 and http://anvil:8545/', 'http://127.0.0.1:8545 and http://anvil:8545/'],
    ['no URL in here: a:// b', 'no URL in here: a:// b'],
  ])('%s -> %s', (text, expected) => {
    expect(redactUrls(text)).toBe(expected);
  });
});

describe('logger', () => {
  it('cuts URLs in messages, fields and errors with their causes', () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: 'info',
      name: 't',
      destination: new Writable({
        write(chunk: Buffer, _enc, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    });
    const err = Object.assign(
      new Error('HTTP request failed. URL: https://rpc.example/v2/k3y', {
        cause: new Error('connect to postgres://u:k3y@db/x'),
      }),
      { url: 'https://rpc.example/v2/k3y' },
    );
    logger.error(
      { err, endpoint: 'https://rpc.example/v2/k3y' },
      'call to https://rpc.example/v2/k3y failed',
    );
    logger.warn({ error: err }, 'sdk %s', 'https://rpc.example/v2/k3y');
    logger.error(err);
    expect(lines).toHaveLength(3);
    for (const line of lines) {
      expect(line).not.toContain('k3y');
      expect(line).toContain('https://rpc.example/[redacted]');
    }
  });
});
