/**
 * The variables @temporalio/envconfig reads, from an environment: every TEMPORAL_* one (address,
 * namespace, API key, TLS, gRPC metadata, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE) and those that
 * locate the default config file, which `temporal config set` writes
 * (`$XDG_CONFIG_HOME/temporalio/temporal.toml`, else `$HOME/.config/...`; `%APPDATA%` on Windows).
 * Without HOME the profile's API key, TLS and gRPC metadata were silently dropped.
 */
export function temporalConfigEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).flatMap(([k, v]) =>
      v !== undefined && (k.startsWith('TEMPORAL_') || CONFIG_FILE_LOCATION.has(k)) ? [[k, v]] : [],
    ),
  );
}

const CONFIG_FILE_LOCATION = new Set(['HOME', 'XDG_CONFIG_HOME', 'APPDATA']);
