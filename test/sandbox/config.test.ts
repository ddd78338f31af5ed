import { loadSandboxConfig, SandboxConfigError } from '../../dev/sandbox/config';

test('defaults', () => {
  expect(loadSandboxConfig({})).toMatchObject({
    port: 4000,
    host: '127.0.0.1',
    spotRate: '5.50',
    spread: '0.02',
    webhookUrl: 'http://127.0.0.1:3000/webhooks/sandbox',
    apiKey: undefined,
    evmRpcUrl: 'http://127.0.0.1:8545',
    chainId: 42161,
    usdtAddress: undefined,
    walletPrivateKey: undefined,
  });
});

test('empty variables count as unset; addresses come back checksummed', () => {
  const config = loadSandboxConfig({
    SANDBOX_API_KEY: '',
    SANDBOX_PORT: '',
    SANDBOX_USDT_ADDRESS: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
  });
  expect(config.apiKey).toBeUndefined();
  expect(config.port).toBe(4000);
  expect(config.usdtAddress).toBe('0x70997970C51812dc3A010C7d01b50e0d17dc79C8');
});

test('every bad variable is named', () => {
  let error: unknown;
  try {
    loadSandboxConfig({
      SANDBOX_PORT: '70000',
      SANDBOX_SPOT_RATE: '0',
      SANDBOX_SPREAD: '1.2',
      SANDBOX_WEBHOOK_URL: 'file:///etc/passwd',
      SANDBOX_USDT_ADDRESS: '0x1234',
      SANDBOX_WALLET_PRIVATE_KEY: 'abc',
      SANDBOX_MERCHANT_NAME: 'A NAME FAR LONGER THAN EMV ALLOWS',
      SANDBOX_PIX_KEY: 'has space',
    });
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(SandboxConfigError);
  for (const name of [
    'SANDBOX_PORT',
    'SANDBOX_SPOT_RATE',
    'SANDBOX_SPREAD',
    'SANDBOX_WEBHOOK_URL',
    'SANDBOX_USDT_ADDRESS',
    'SANDBOX_WALLET_PRIVATE_KEY',
    'SANDBOX_MERCHANT_NAME',
    'SANDBOX_PIX_KEY',
  ]) {
    expect((error as Error).message).toContain(name);
  }
  // The key's value is not echoed back.
  expect((error as Error).message).not.toContain('abc');
});

test('SANDBOX_STATE_FILE: memory only unless set', () => {
  expect(loadSandboxConfig({}).stateFile).toBeUndefined();
  expect(loadSandboxConfig({ SANDBOX_STATE_FILE: '' }).stateFile).toBeUndefined();
  expect(loadSandboxConfig({ SANDBOX_STATE_FILE: '/tmp/sandbox.json' }).stateFile).toBe('/tmp/sandbox.json');
});

describe('the API Pix face', () => {
  it('is off unless SANDBOX_API_PIX_PORT is set', () => {
    expect(loadSandboxConfig({}).apiPix).toBeUndefined();
    expect(loadSandboxConfig({ SANDBOX_API_PIX_PORT: '' }).apiPix).toBeUndefined();
  });

  it('has local defaults, and the server names always include 127.0.0.1 and localhost', () => {
    expect(loadSandboxConfig({ SANDBOX_API_PIX_PORT: '4443' }).apiPix).toEqual({
      port: 4443,
      certDir: '.data/sandbox-api-pix',
      serverNames: ['127.0.0.1', 'localhost'],
      clientId: 'payout-service',
      clientSecret: 'sandbox-api-pix-secret',
      tokenTtlSeconds: 3600,
    });
    expect(
      loadSandboxConfig({ SANDBOX_API_PIX_PORT: '4443', SANDBOX_API_PIX_CERT_NAMES: 'sandbox,localhost' })
        .apiPix?.serverNames,
    ).toEqual(['127.0.0.1', 'localhost', 'sandbox']);
  });

  it('names each bad setting', () => {
    expect(() =>
      loadSandboxConfig({
        SANDBOX_API_PIX_PORT: 'x',
        SANDBOX_API_PIX_CERT_NAMES: 'a b',
        SANDBOX_API_PIX_CLIENT_ID: 'a:b',
        SANDBOX_API_PIX_TOKEN_TTL_SECONDS: '0',
      }),
    ).toThrow(
      /SANDBOX_API_PIX_PORT[^]*SANDBOX_API_PIX_CERT_NAMES[^]*SANDBOX_API_PIX_CLIENT_ID[^]*SANDBOX_API_PIX_TOKEN_TTL_SECONDS/,
    );
  });
});
