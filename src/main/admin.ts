import { Connection } from '@temporalio/client';
import { runMigrations } from '../adapters/db/migrate';
import { createPool } from '../adapters/db/pool';
import { createSecretBox } from '../adapters/secrets/secret-box';
import { runAdmin } from '../cli/admin';
import { UsageError, type AdminResources } from '../cli/command';
import {
  loadAdminCallbacksConfig,
  loadAdminDatabaseConfig,
  loadAdminPayloadKeysConfig,
  loadAdminPayoutsConfig,
  loadAdminTemporalConfig,
  loadAdminApiPixConfig,
} from '../config';
import { connectClient, temporalConnectionOptions } from '../temporal/connection';
import { createDataConverter } from '../temporal/data-converter';
import { apiPixProviderOf, callbackUrlPolicyOf, payloadKeysOf, settlementNetworkOf } from './wiring';

/**
 * The admin CLI process. Each command configures only what it uses: `partner create` reads
 * DATABASE_URL and nothing else, so a setting of another process (a treasury key in the shell, a
 * Temporal profile) never stops it.
 */
const resources: AdminResources = {
  async withDatabase(work) {
    const config = loadAdminDatabaseConfig();
    await runMigrations(config.DATABASE_URL);
    const db = createPool(config.DATABASE_URL, 2);
    try {
      return await work(db);
    } finally {
      await db.end();
    }
  },
  async withTemporal(work) {
    const config = loadAdminTemporalConfig();
    const connection = await Connection.connect(temporalConnectionOptions(config));
    try {
      return await work({
        service: connection.workflowService,
        namespace: config.TEMPORAL_NAMESPACE,
        deploymentName: config.TEMPORAL_WORKER_DEPLOYMENT_NAME,
      });
    } finally {
      await connection.close();
    }
  },
  async withClient(work) {
    const { client, connection } = await connectClient(
      loadAdminTemporalConfig(),
      createDataConverter(payloadKeysOf(loadAdminPayloadKeysConfig())),
    );
    try {
      return await work(client);
    } finally {
      await connection.close();
    }
  },
  callbacks() {
    const config = loadAdminCallbacksConfig();
    return { policy: callbackUrlPolicyOf(config), secrets: createSecretBox(payloadKeysOf(config)) };
  },
  network: () => settlementNetworkOf(loadAdminPayoutsConfig()),
  async withApiPix(work) {
    const config = loadAdminApiPixConfig();
    if (config.PIX_PROVIDER !== 'bcb-api-pix') {
      throw new UsageError('the pix commands need PIX_PROVIDER=bcb-api-pix and its PIX_API_* settings');
    }
    const base = config.PUBLIC_BASE_URL?.replace(/\/+$/, '');
    return work({
      webhooks: apiPixProviderOf(config),
      ...(base !== undefined && { defaultWebhookUrl: `${base}/webhooks/${config.PROVIDER_NAME}` }),
    });
  },
};

// exitCode rather than exit(): the process ends once stdout has drained.
runAdmin(process.argv.slice(2), resources).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    if ((err as { code?: string })?.code === 'ECONNREFUSED') {
      process.stderr.write('is the database up? start the stack with `npm start`, or set DATABASE_URL\n');
    }
    process.exitCode = err instanceof UsageError ? 2 : 1;
  },
);
