import { DEFAULT_NETWORK } from '../support/network';
import { randomBytes } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createCallbackActivities } from '../../src/activities/callback.activities';
import { createPartner, setPartnerCallback } from '../../src/adapters/db/partners-repo';
import type { Db } from '../../src/adapters/db/pool';
import { createSecretBox } from '../../src/adapters/secrets/secret-box';
import { payloadKeysOf } from '../../src/main/wiring';
import { createLogger } from '../../src/observability/logger';
import { workflowBundle } from '../support/stack';
import { tracingSinks } from '../../src/temporal/tracing';

/** Seals callback secrets as a worker with its own payload key does. */
export const testSecrets = createSecretBox(
  payloadKeysOf({ PAYLOAD_ENCRYPTION_KEY: randomBytes(32).toString('base64') }),
);

/** A partner of its own per test, optionally with a callback URL and secret. */
export async function partnerWithCallback(
  db: Db,
  callback?: { url: string; secret: string },
): Promise<string> {
  const { partner } = await createPartner(db, 'callback test partner');
  if (callback) await setPartnerCallback(db, partner.id, callback, testSecrets);
  return partner.id;
}

/** A worker of the callback delivery workflow on `taskQueue`, allowed to POST to loopback receivers. */
export async function createCallbackWorker(
  env: TestWorkflowEnvironment,
  db: Db,
  taskQueue: string,
): Promise<Worker> {
  return Worker.create({
    // The bundle's tracing interceptors export through this sink (off here: it drops them).
    sinks: tracingSinks(),
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: await workflowBundle(),
    activities: createCallbackActivities({
      network: DEFAULT_NETWORK,
      secrets: testSecrets,
      db,
      logger: createLogger({ level: 'silent', name: 'test' }),
      sender: { timeoutMs: 2_000, requireHttps: false, allowPrivateNetworks: true },
    }),
  });
}
