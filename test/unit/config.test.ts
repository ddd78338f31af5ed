import {
  ConfigError,
  loadAdminCallbacksConfig,
  loadAdminDatabaseConfig,
  loadAdminTemporalConfig,
  loadApiConfig,
  loadMigrateConfig,
  loadWorkerConfig,
} from '../../src/config';
import { apiChargeCreatorOf } from '../../src/main/wiring';
import { createMetrics } from '../../src/observability/metrics';

// Each process validates only the variables it reads: a setting that is wrong or missing for one
// process never stops another.

const FEEDS = {
  PRICE_FEED_BRL_USD_ADDRESS: '0xDc64a140Aa3E981100a9becA4E685f962f0cF6C9',
  PRICE_FEED_USDT_USD_ADDRESS: '0x5FC8d32690cc91D4c39d9d3abcBD16989F875707',
};
const TREASURY = {
  SETTLEMENT_MODE: 'treasury',
  TREASURY_ADDRESS: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
};

describe('the quote source (QUOTE_SOURCE, docs/decisions.md D52)', () => {
  it("is the provider's quote in provider mode and the price feeds in treasury mode, unless set", () => {
    expect(loadApiConfig({}).QUOTE_SOURCE).toBe('provider');
    expect(loadApiConfig({ ...TREASURY, ...FEEDS }).QUOTE_SOURCE).toBe('price-feeds');
    expect(loadApiConfig({ ...TREASURY, QUOTE_SOURCE: 'provider' }).QUOTE_SOURCE).toBe('provider');
    expect(loadApiConfig({ QUOTE_SOURCE: 'price-feeds', ...FEEDS }).QUOTE_SOURCE).toBe('price-feeds');
    expect(loadApiConfig({ QUOTE_SOURCE: 'static', FX_STATIC_RATE: '5.40' }).FX_STATIC_RATE).toBe('5.40');
  });

  it('refuses the feeds without both addresses, naming each and why it is needed', () => {
    expect(() => loadApiConfig(TREASURY)).toThrow(
      new ConfigError(
        'invalid configuration: PRICE_FEED_BRL_USD_ADDRESS is required when QUOTE_SOURCE=price-feeds (the default in treasury mode); ' +
          'PRICE_FEED_USDT_USD_ADDRESS is required when QUOTE_SOURCE=price-feeds (the default in treasury mode)',
      ),
    );
    expect(() =>
      loadApiConfig({
        QUOTE_SOURCE: 'price-feeds',
        PRICE_FEED_BRL_USD_ADDRESS: FEEDS.PRICE_FEED_BRL_USD_ADDRESS,
      }),
    ).toThrow(
      new ConfigError(
        'invalid configuration: PRICE_FEED_USDT_USD_ADDRESS is required when QUOTE_SOURCE=price-feeds',
      ),
    );
    expect(() => loadApiConfig({ ...TREASURY, ...FEEDS, PRICE_FEED_USDT_USD_ADDRESS: '0x1234' })).toThrow(
      /PRICE_FEED_USDT_USD_ADDRESS must be a 0x-prefixed 20-byte address/,
    );
  });

  it('has no default rate: static needs one, and a rate given to another source is refused', () => {
    expect(() => loadApiConfig({ QUOTE_SOURCE: 'static' })).toThrow(
      new ConfigError(
        'invalid configuration: FX_STATIC_RATE is required when QUOTE_SOURCE=static (there is no default rate)',
      ),
    );
    expect(() => loadApiConfig({ FX_STATIC_RATE: '5.40' })).toThrow(
      /FX_STATIC_RATE is read only when QUOTE_SOURCE=static, not with QUOTE_SOURCE=provider/,
    );
    expect(() => loadApiConfig({ ...TREASURY, ...FEEDS, FX_STATIC_RATE: '5.40' })).toThrow(
      /FX_STATIC_RATE is read only when QUOTE_SOURCE=static, not with QUOTE_SOURCE=price-feeds \(the default in treasury mode\)/,
    );
    for (const rate of ['0', '0.000', '-5.4', '5,40', 'abc'])
      expect(() => loadApiConfig({ QUOTE_SOURCE: 'static', FX_STATIC_RATE: rate })).toThrow(/FX_STATIC_RATE/);
  });

  it('refuses an unknown source and a feed age under a minute; the worker reads none of it', () => {
    expect(() => loadApiConfig({ QUOTE_SOURCE: 'oracle' })).toThrow(/QUOTE_SOURCE/);
    expect(() =>
      loadApiConfig({ ...FEEDS, QUOTE_SOURCE: 'price-feeds', PRICE_FEED_MAX_AGE_SECONDS: '59' }),
    ).toThrow(/PRICE_FEED_MAX_AGE_SECONDS/);
    expect(loadApiConfig({}).PRICE_FEED_MAX_AGE_SECONDS).toBe(90_000);
    expect(() =>
      loadWorkerConfig({
        SETTLEMENT_MODE: 'treasury',
        TREASURY_PRIVATE_KEY: '0x' + '11'.repeat(32),
        QUOTE_SOURCE: 'static',
      }),
    ).not.toThrow();
  });
});

describe('per-process configuration', () => {
  it('treasury mode without its key stops the worker, which signs the transfers, and nothing else', () => {
    const env = { SETTLEMENT_MODE: 'treasury' };
    expect(() => loadWorkerConfig(env)).toThrow(
      new ConfigError(
        'invalid configuration: TREASURY_PRIVATE_KEY is required when SETTLEMENT_MODE=treasury',
      ),
    );
    // The api reads the treasury's health by its address, never the key.
    expect(() => loadApiConfig(env)).toThrow(/TREASURY_ADDRESS is required when SETTLEMENT_MODE=treasury/);
    const api = loadApiConfig({
      ...env,
      ...FEEDS,
      TREASURY_ADDRESS: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
    });
    expect(api.SETTLEMENT_MODE).toBe('treasury');
    // One environment for both processes: the api derives the address from the key and keeps no key.
    const shared = loadApiConfig({
      ...env,
      ...FEEDS,
      TREASURY_PRIVATE_KEY: '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
    });
    expect(shared.TREASURY_ADDRESS).toBe('0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC');
    expect(shared).not.toHaveProperty('TREASURY_PRIVATE_KEY');
    expect(() => loadMigrateConfig(env)).not.toThrow();
    expect(() => loadAdminDatabaseConfig(env)).not.toThrow();
    expect(() => loadAdminCallbacksConfig(env)).not.toThrow();
  });

  it("a bad value of one process's variable stops only the processes that read it", () => {
    const workerOnly = { TREASURY_REPRICE_AFTER_SECONDS: '1', WORKER_SHUTDOWN_GRACE_SECONDS: '-1' };
    expect(() => loadWorkerConfig(workerOnly)).toThrow(
      /WORKER_SHUTDOWN_GRACE_SECONDS .*; TREASURY_REPRICE_AFTER_SECONDS/,
    );
    expect(() => loadApiConfig(workerOnly)).not.toThrow();
    const apiOnly = { MAX_AMOUNT_BRL: '1.234', PORT: 'http' };
    expect(() => loadApiConfig(apiOnly)).toThrow(/PORT/);
    expect(() => loadApiConfig(apiOnly)).toThrow(/MAX_AMOUNT_BRL/);
    expect(() => loadWorkerConfig(apiOnly)).not.toThrow();
    expect(() =>
      loadAdminDatabaseConfig({ ...workerOnly, ...apiOnly, DATABASE_POOL_SIZE: '0' }),
    ).not.toThrow();
  });

  it('the migrations job and the database commands of the admin CLI read only the database', () => {
    const elsewhere = {
      NODE_ENV: 'production',
      TEMPORAL_PROFILE: 'no-such-profile',
      PAYLOAD_ENCRYPTION_KEY: 'not a key',
      DATABASE_URL: 'postgres://db.example/payouts',
    };
    expect(loadMigrateConfig(elsewhere)).toEqual({
      LOG_LEVEL: 'info',
      DATABASE_URL: 'postgres://db.example/payouts',
    });
    expect(loadAdminDatabaseConfig(elsewhere)).toEqual({ DATABASE_URL: 'postgres://db.example/payouts' });
    // The commands that use Temporal or the payload keys do check them.
    expect(() => loadAdminTemporalConfig(elsewhere)).toThrow(/TEMPORAL_PROFILE/);
    expect(() => loadAdminCallbacksConfig(elsewhere)).toThrow(/PAYLOAD_ENCRYPTION_KEY/);
  });

  it('production needs a payload key in every process that encrypts or decrypts', () => {
    for (const load of [loadApiConfig, loadWorkerConfig, loadAdminCallbacksConfig]) {
      expect(() => load({ NODE_ENV: 'production' })).toThrow(
        /PAYLOAD_ENCRYPTION_KEY is required when NODE_ENV=production/,
      );
    }
  });

  it('never lets the policy return a payment that may still settle its payout', () => {
    expect(() => loadWorkerConfig({ REFUND_AUTO_RETURN_KINDS: 'wrong_amount,payout_failed' })).toThrow(
      'invalid configuration: REFUND_AUTO_RETURN_KINDS "payout_failed" cannot return without an operator: the payment may still settle its payout',
    );
    expect(loadWorkerConfig({ REFUND_AUTO_RETURN_KINDS: 'wrong_charge' }).REFUND_AUTO_RETURN_KINDS).toEqual([
      'wrong_charge',
    ]);
  });
});

describe("the api's own PIX charges (API_CREATES_CHARGES, docs/decisions.md D81)", () => {
  const metrics = createMetrics();
  it('are on by default with the provider API, and off when the setting says so or for API Pix', () => {
    expect(loadApiConfig({}).API_CREATES_CHARGES).toBe(true);
    expect(apiChargeCreatorOf(loadApiConfig({}), metrics)).toBeInstanceOf(Function);
    const off = loadApiConfig({ API_CREATES_CHARGES: 'false' });
    expect(off.API_CREATES_CHARGES).toBe(false);
    expect(apiChargeCreatorOf(off, metrics)).toBeUndefined();
    expect(
      apiChargeCreatorOf({ ...loadApiConfig({}), PIX_PROVIDER: 'bcb-api-pix' }, metrics),
    ).toBeUndefined();
  });

  it('refuses a value that is not a boolean', () => {
    expect(() => loadApiConfig({ API_CREATES_CHARGES: 'sometimes' })).toThrow(/API_CREATES_CHARGES/);
  });
});
