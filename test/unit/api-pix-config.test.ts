import { loadAdminApiPixConfig, loadApiConfig, loadWorkerConfig } from '../../src/config';
import { payoutIdOfTxid, txidOfPayout } from '../../src/adapters/provider/api-pix/txid';

const TREASURY = {
  SETTLEMENT_MODE: 'treasury',
  TREASURY_PRIVATE_KEY: '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  // The api quotes from the price feeds in treasury mode (docs/decisions.md D52).
  PRICE_FEED_BRL_USD_ADDRESS: '0xDc64a140Aa3E981100a9becA4E685f962f0cF6C9',
  PRICE_FEED_USDT_USD_ADDRESS: '0x5FC8d32690cc91D4c39d9d3abcBD16989F875707',
};
const API_PIX = {
  PIX_PROVIDER: 'bcb-api-pix',
  PIX_API_URL: 'https://pix.example.com/api/v2',
  PIX_API_CLIENT_ID: 'client',
  PIX_API_CLIENT_SECRET: 'secret',
  PIX_API_CERT_FILE: '/etc/pix/client.pem',
  PIX_API_KEY_FILE: '/etc/pix/client-key.pem',
  PIX_API_RECEIVER_KEY: '7f6844d0-de89-47e5-9ef7-e0a35a681615',
};

describe('PIX_PROVIDER=bcb-api-pix settings', () => {
  it('needs treasury settlement in the api and the worker: an institution sends no USDT', () => {
    for (const load of [loadApiConfig, loadWorkerConfig]) {
      expect(() => load({ ...API_PIX })).toThrow(
        'invalid configuration: PIX_PROVIDER bcb-api-pix needs SETTLEMENT_MODE=treasury: an API Pix institution collects BRL and sends no USDT',
      );
    }
    expect(loadWorkerConfig({ ...API_PIX, ...TREASURY }).PIX_PROVIDER).toBe('bcb-api-pix');
    expect(loadApiConfig({ ...API_PIX, ...TREASURY }).PIX_PROVIDER).toBe('bcb-api-pix');
  });

  it('names every missing setting the worker and the admin CLI need to reach the institution', () => {
    const env = { ...TREASURY, PIX_PROVIDER: 'bcb-api-pix' };
    const missing = [
      'PIX_API_URL',
      'PIX_API_CLIENT_ID',
      'PIX_API_CLIENT_SECRET',
      'PIX_API_CERT_FILE',
      'PIX_API_KEY_FILE',
      'PIX_API_RECEIVER_KEY',
    ].map((name) => `${name} is required when PIX_PROVIDER=bcb-api-pix`);
    expect(() => loadWorkerConfig(env)).toThrow(`invalid configuration: ${missing.join('; ')}`);
    expect(() => loadAdminApiPixConfig(env)).toThrow(`invalid configuration: ${missing.join('; ')}`);
    // The api only takes the institution's webhooks: it never calls it.
    expect(() => loadApiConfig(env)).not.toThrow();
  });

  it('refuses a plain-http institution URL: API Pix is mutual TLS', () => {
    expect(() =>
      loadWorkerConfig({ ...API_PIX, ...TREASURY, PIX_API_URL: 'http://pix.example.com/v2' }),
    ).toThrow('invalid configuration: PIX_API_URL must be an https URL');
  });

  it('leaves the default provider untouched by API Pix settings', () => {
    const config = loadWorkerConfig({});
    expect(config.PIX_PROVIDER).toBe('provider-api');
    expect(config.PIX_API_URL).toBeUndefined();
  });
});

it('refuses the provider as the rate source: an institution quotes nothing', () => {
  const env = { ...API_PIX, ...TREASURY, QUOTE_SOURCE: 'provider' };
  expect(() => loadApiConfig(env)).toThrow(
    'invalid configuration: QUOTE_SOURCE provider is not a rate source with PIX_PROVIDER=bcb-api-pix: use price-feeds or static',
  );
  expect(loadApiConfig({ ...API_PIX, ...TREASURY }).QUOTE_SOURCE ?? 'price-feeds').toBe('price-feeds');
});

describe('txid of a payout', () => {
  it('is the payout id in 32 hex digits, the same on every retry, and maps back', () => {
    const payoutId = '3F2504E0-4F89-41D3-9A0C-0305E82C3301';
    const txid = txidOfPayout(payoutId);
    expect(txid).toBe('3f2504e04f8941d39a0c0305e82c3301');
    expect(txid).toMatch(/^[a-zA-Z0-9]{26,35}$/);
    expect(txidOfPayout(payoutId)).toBe(txid);
    expect(payoutIdOfTxid(txid)).toBe(payoutId.toLowerCase());
  });

  it('names no payout for a txid this service did not derive', () => {
    expect(payoutIdOfTxid('fc9a4366ff3d4964b5dbc6c91a8722d3x')).toBeNull();
    expect(payoutIdOfTxid('ABCDEFGHIJKLMNOPQRSTUVWXYZ')).toBeNull();
    expect(() => txidOfPayout('not-a-uuid')).toThrow();
  });
});
