import { readFileSync } from 'node:fs';
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import type { Config } from '../config';
import { createDataConverter } from './data-converter';

type TemporalConfig = Pick<
  Config,
  | 'TEMPORAL_ADDRESS'
  | 'TEMPORAL_NAMESPACE'
  | 'TEMPORAL_TLS'
  | 'TEMPORAL_API_KEY'
  | 'TEMPORAL_TLS_CERT_PATH'
  | 'TEMPORAL_TLS_KEY_PATH'
  | 'PAYLOAD_ENCRYPTION_KEY'
  | 'PAYLOAD_ENCRYPTION_PREVIOUS_KEYS'
>;

/** TLS and auth for Temporal Cloud or a secured cluster; nothing for the local dev server. */
function security(
  config: TemporalConfig,
): Pick<ConnectionOptions & NativeConnectionOptions, 'tls' | 'apiKey'> {
  const mtls =
    config.TEMPORAL_TLS_CERT_PATH && config.TEMPORAL_TLS_KEY_PATH
      ? {
          clientCertPair: {
            crt: readFileSync(config.TEMPORAL_TLS_CERT_PATH),
            key: readFileSync(config.TEMPORAL_TLS_KEY_PATH),
          },
        }
      : undefined;
  const tls = mtls ?? (config.TEMPORAL_TLS || config.TEMPORAL_API_KEY ? true : undefined);
  return { ...(tls ? { tls } : {}), ...(config.TEMPORAL_API_KEY ? { apiKey: config.TEMPORAL_API_KEY } : {}) };
}

/** A client that encrypts what it sends and decrypts what it reads (see payload-codec.ts). */
export async function connectClient(
  config: TemporalConfig,
): Promise<{ client: Client; connection: Connection }> {
  const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS, ...security(config) });
  const client = new Client({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    dataConverter: createDataConverter(config),
  });
  return { client, connection };
}

export function connectWorker(config: TemporalConfig): Promise<NativeConnection> {
  return NativeConnection.connect({ address: config.TEMPORAL_ADDRESS, ...security(config) });
}
