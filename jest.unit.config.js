// The fast inner loop (`npm run test:unit`): pure unit tests, workflow tests on the time-skipping
// server, replay tests and the world simulator. No PostgreSQL, anvil or dev server, so no global setup.
const base = require('./jest.config');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  roots: [
    '<rootDir>/test/unit',
    '<rootDir>/test/simulation',
    '<rootDir>/test/workflow',
    '<rootDir>/test/replay',
  ],
  globalSetup: undefined,
  globalTeardown: undefined,
};
