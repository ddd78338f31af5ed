import type { Db } from '../adapters/db/pool';
import type { Config } from '../config';
import { createCodecEndpoint } from '../temporal/codec-endpoint';
import { createPayloadCodec } from '../temporal/data-converter';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import { startOpsServer, type OpsServer } from './ops-server';
import { registerAttentionGauges, registerCallbackGauges } from './ops-gauges';
import { registerOpenPayoutGauges } from './payout-gauges';

type OpsConfig = Pick<
  Config,
  | 'HOST'
  | 'METRICS_PORT'
  | 'NODE_ENV'
  | 'PAYLOAD_ENCRYPTION_KEY'
  | 'PAYLOAD_ENCRYPTION_PREVIOUS_KEYS'
  | 'CODEC_AUTH_TOKEN'
  | 'CODEC_CORS_ORIGINS'
>;

/**
 * The api's ops port (METRICS_PORT): /metrics, with the open-payout gauges that the "stuck"
 * alerts read, and the Temporal Web UI's payload codec endpoint under /codec.
 */
export function startApiOpsServer(
  config: OpsConfig,
  deps: { db: Db; metrics: Metrics; logger: Logger },
): Promise<OpsServer> {
  const { logger } = deps;
  registerOpenPayoutGauges(deps.metrics.registry, deps.db, logger);
  registerCallbackGauges(deps.metrics.registry, deps.db, logger);
  registerAttentionGauges(deps.metrics.registry, deps.db, logger);
  const codec = createPayloadCodec(config);
  const codecEndpoint = codec
    ? createCodecEndpoint({
        codec,
        authToken: config.CODEC_AUTH_TOKEN,
        requireAuthToken: config.NODE_ENV === 'production',
        corsOrigins: config.CODEC_CORS_ORIGINS.split(',').map((origin) => origin.trim()),
        logger,
      })
    : undefined;
  return startOpsServer({
    host: config.HOST,
    port: config.METRICS_PORT,
    registry: deps.metrics.registry,
    handlers: codecEndpoint ? [codecEndpoint] : [],
    logger,
  });
}
