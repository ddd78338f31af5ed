import { Client, Connection, type ClientInterceptors } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { loadClientConfigProfile, toClientOptions } from '@temporalio/envconfig';
import { NativeConnection } from '@temporalio/worker';
import { temporalConfigEnv } from './config-file-env';

/**
 * Where and how to reach Temporal, by the names Temporal's environment configuration gives them
 * (the `temporal` CLI reads the same variables).
 */
export interface TemporalConfig {
  TEMPORAL_ADDRESS: string;
  TEMPORAL_NAMESPACE: string;
  TEMPORAL_API_KEY?: string;
  TEMPORAL_TLS?: boolean;
  TEMPORAL_TLS_CLIENT_CERT_PATH?: string;
  TEMPORAL_TLS_CLIENT_KEY_PATH?: string;
  TEMPORAL_PROFILE?: string;
}

/** The variables of `config` that Temporal's environment configuration reads, as strings. */
function temporalEnv(config: TemporalConfig): Record<string, string> {
  const vars: Record<string, string | boolean | undefined> = {
    TEMPORAL_ADDRESS: config.TEMPORAL_ADDRESS,
    TEMPORAL_NAMESPACE: config.TEMPORAL_NAMESPACE,
    TEMPORAL_API_KEY: config.TEMPORAL_API_KEY,
    TEMPORAL_TLS: config.TEMPORAL_TLS,
    TEMPORAL_TLS_CLIENT_CERT_PATH: config.TEMPORAL_TLS_CLIENT_CERT_PATH,
    TEMPORAL_TLS_CLIENT_KEY_PATH: config.TEMPORAL_TLS_CLIENT_KEY_PATH,
    TEMPORAL_PROFILE: config.TEMPORAL_PROFILE,
  };
  return Object.fromEntries(
    Object.entries(vars).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)]])),
  );
}

/**
 * Connection options exactly as the `temporal` CLI and every Temporal SDK resolve them
 * (@temporalio/envconfig): the profile named by TEMPORAL_PROFILE (default `default`) of the config
 * file (TEMPORAL_CONFIG_FILE, default ~/.config/temporalio/temporal.toml), overridden by the
 * TEMPORAL_* variables (address, namespace, API key, TLS on/off, client certificate and key, server
 * CA and name, gRPC metadata). TLS is on with an API key or a client certificate. The values the
 * service validated (config) win over the process environment, so tests can pass their own.
 */
export function temporalConnectionOptions(
  config: TemporalConfig,
  env: NodeJS.ProcessEnv = process.env,
): ReturnType<typeof toClientOptions>['connectionOptions'] & { address: string } {
  const profile = loadClientConfigProfile({
    overrideEnvVars: { ...temporalConfigEnv(env), ...temporalEnv(config) },
  });
  const { connectionOptions } = toClientOptions(profile);
  return { ...connectionOptions, address: connectionOptions.address ?? config.TEMPORAL_ADDRESS };
}

/** A client that encrypts what it sends and decrypts what it reads with `dataConverter` (data-converter.ts). */
export async function connectClient(
  config: TemporalConfig,
  dataConverter: DataConverter,
  interceptors: ClientInterceptors = {},
): Promise<{ client: Client; connection: Connection }> {
  const connection = await Connection.connect(temporalConnectionOptions(config));
  const client = new Client({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    dataConverter,
    interceptors,
  });
  return { client, connection };
}

export function connectWorker(config: TemporalConfig): Promise<NativeConnection> {
  return NativeConnection.connect(temporalConnectionOptions(config));
}
