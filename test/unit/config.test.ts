import {
  ConfigError,
  loadAdminCallbacksConfig,
  loadAdminDatabaseConfig,
  loadAdminTemporalConfig,
  loadApiConfig,
  loadMigrateConfig,
  loadWorkerConfig,
} from '../../src/config';

// Each process validates only the variables it reads: a setting that is wrong or missing for one
// process never stops another.

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
    const api = loadApiConfig({ ...env, TREASURY_ADDRESS: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC' });
    expect(api.SETTLEMENT_MODE).toBe('treasury');
    // One environment for both processes: the api derives the address from the key and keeps no key.
    const shared = loadApiConfig({
      ...env,
      TREASURY_PRIVATE_KEY: '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
    });
    expect(shared.TREASURY_ADDRESS).toBe('0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC');
    expect(shared).not.toHaveProperty('TREASURY_PRIVATE_KEY');
    expect(() => loadMigrateConfig(env)).not.toThrow();
    expect(() => loadAdminDatabaseConfig(env)).not.toThrow();
    expect(() => loadAdminCallbacksConfig(env)).not.toThrow();
  });

  it("a bad value of one process's variable stops only the processes that read it", () => {
    const workerOnly = { TREASURY_REPRICE_AFTER_SECONDS: '1', CALLBACK_TIMEOUT_MS: '99999' };
    expect(() => loadWorkerConfig(workerOnly)).toThrow(
      /TREASURY_REPRICE_AFTER_SECONDS .*; CALLBACK_TIMEOUT_MS/,
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
});
