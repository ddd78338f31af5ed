import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runMigrations } from '../../src/adapters/db/migrate';
import { freePort } from '../../dev/local/infra/ports';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../dev/local/infra/postgres';
import { makeTemplate } from './database';

// Jest globalSetup: one PostgreSQL for the whole run, migrated once. Its URL reaches the test files
// through process.env, which jest workers inherit from this (parent) process.

export interface TestInfra {
  postgres: EmbeddedPostgresHandle;
  tempDir: string;
}

// globalSetup and globalTeardown run in the same process but in separate module registries, so the
// handle travels on globalThis rather than in a module variable.
const INFRA_KEY = Symbol.for('pix-usdt-payouts.test-infra');
type InfraHolder = { [INFRA_KEY]?: TestInfra };

export function takeTestInfra(): TestInfra | undefined {
  const holder = globalThis as InfraHolder;
  const infra = holder[INFRA_KEY];
  delete holder[INFRA_KEY];
  return infra;
}

/** Server logs are noise in a passing run; TEST_INFRA_LOG=1 shows them when debugging start-up. */
const log = process.env.TEST_INFRA_LOG ? (line: string) => process.stderr.write(`${line}\n`) : undefined;

export default async function globalSetup(): Promise<void> {
  // A database supplied from outside (e.g. a CI service container) is used as is, only migrated.
  const databaseUrl = process.env.TEST_DATABASE_URL ?? (await startTestPostgres());
  process.env.TEST_DATABASE_URL = databaseUrl;
  try {
    await runMigrations(databaseUrl, log);
    await makeTemplate(databaseUrl);
  } catch (err) {
    await stopTestInfra(takeTestInfra());
    throw err;
  }
}

async function startTestPostgres(): Promise<string> {
  const tempDir = await mkdtemp(path.join(os.tmpdir(), 'payouts-test-pg-'));
  try {
    // mkdtemp makes it 0700; as root the server runs as the `postgres` user, which must enter it.
    await chmod(tempDir, 0o755);
    const postgres = await startEmbeddedPostgres({
      dataDir: path.join(tempDir, 'data'),
      port: await freePort(),
      persistent: false,
      log,
    });
    (globalThis as InfraHolder)[INFRA_KEY] = { postgres, tempDir };
    return postgres.databaseUrl;
  } catch (err) {
    await rm(tempDir, { recursive: true, force: true });
    throw err;
  }
}

export async function stopTestInfra(infra: TestInfra | undefined): Promise<void> {
  if (!infra) return;
  try {
    await infra.postgres.stop();
  } finally {
    await rm(infra.tempDir, { recursive: true, force: true });
  }
}
