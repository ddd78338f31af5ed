import { Writable } from 'node:stream';
import { CENSOR, createLogger, scrubSecrets } from '../../src/observability/logger';
import { PinoTemporalLogger } from '../../src/temporal/worker-runtime';

// The logger's redaction on its own. operability.test.ts scans the real output of the api and
// worker processes after a payout went through them.

function capture(level = 'trace') {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      raw.push(chunk.toString());
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger({ level, name: 'test', destination }), lines, raw };
}

const SECRETS = {
  apiKey: 'pk_live_abcdefghijklmnopqrstuvwxyz',
  cpf: '52998224725',
  token: 'tok_0123456789abcdef',
  privateKey: '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  secret: 'whsec_abcdef0123456789',
};

describe('logger redaction', () => {
  it('censors sensitive fields at any depth and in any spelling', () => {
    const { logger, raw, lines } = capture();
    logger.info(
      {
        payoutId: 'p-1',
        headers: { 'x-api-key': SECRETS.apiKey, authorization: `Bearer ${SECRETS.token}` },
        payout: { request: { pixKey: SECRETS.cpf, pix_key: SECRETS.cpf, PIX_KEY: SECRETS.cpf } },
        events: [{ webhook: { token: SECRETS.token } }],
        settlement: { treasury: { privateKey: SECRETS.privateKey, wallet_private_key: SECRETS.privateKey } },
        partner: { callbackSecret: SECRETS.secret, api_key: SECRETS.apiKey },
        tokenPrefix: 'tok_01',
      },
      'everything at once',
    );
    const out = raw.join('');
    for (const [what, value] of Object.entries(SECRETS))
      expect({ what, leaked: out.includes(value) }).toEqual({ what, leaked: false });
    expect(lines[0]).toMatchObject({
      payoutId: 'p-1',
      tokenPrefix: 'tok_01', // a deliberate prefix stays: it names the token without being it
      payout: { request: { pixKey: CENSOR, pix_key: CENSOR, PIX_KEY: CENSOR } },
      events: [{ webhook: { token: CENSOR } }],
    });
  });

  it('censors top-level fields, on child loggers too', () => {
    const { logger, raw } = capture();
    logger.info({ pixKey: SECRETS.cpf, token: SECRETS.token }, 'top level');
    logger.child({ payoutId: 'p-2' }).warn({ apiKey: SECRETS.apiKey }, 'child');
    const out = raw.join('');
    expect(out).not.toContain(SECRETS.cpf);
    expect(out).not.toContain(SECRETS.token);
    expect(out).not.toContain(SECRETS.apiKey);
    expect(out).toContain('"payoutId":"p-2"');
  });

  it('leaves the objects it logs untouched and serialises errors', () => {
    const { logger, lines } = capture();
    const payout = { pixKey: SECRETS.cpf };
    logger.error({ payout, error: new Error('provider said no') }, 'failed');
    expect(payout.pixKey).toBe(SECRETS.cpf);
    expect(lines[0]).toMatchObject({ error: { type: 'Error', message: 'provider said no' } });
    expect(scrubSecrets(['a', { secret: 'x' }])).toEqual(['a', { secret: CENSOR }]);
  });
});

describe('Temporal SDK logs through pino', () => {
  it('keeps levels and metadata, and demotes the bundler report to debug', () => {
    const { logger, lines } = capture('debug');
    const sdk = new PinoTemporalLogger(logger);
    sdk.warn('Activity failed', {
      workflowId: 'payout-1',
      activityType: 'createPixCharge',
      error: new Error('boom'),
    });
    sdk.info('asset workflow-bundle.js 1.7 MiB\nwebpack compiled successfully', { sdkComponent: 'worker' });
    sdk.trace('below the level');
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        msg: 'Activity failed',
        workflowId: 'payout-1',
        error: expect.objectContaining({ message: 'boom' }),
      }),
      expect.objectContaining({ level: 20, sdkComponent: 'worker' }),
    ]);
  });
});
