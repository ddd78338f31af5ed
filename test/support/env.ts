/** URL of the PostgreSQL that test/support/global-setup.ts starts for the whole jest run. */
export function testDatabaseUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) {
    throw new Error(
      'TEST_DATABASE_URL is not set: run the tests through jest (jest.config.js globalSetup starts ' +
        'PostgreSQL), or export TEST_DATABASE_URL to point at a database you can write to.',
    );
  }
  return url;
}
