import { privateKeyToAddress } from 'viem/accounts';
import { z } from 'zod';
import { loadClientConfigProfile } from '@temporalio/envconfig';
import { temporalConfigEnv } from '../temporal/config-file-env';
import { codecRules } from './api-process';
import { apiPixRules } from './api-pix';
import { treasuryRules } from './chain';
import {
  ADMIN_API_PIX,
  ADMIN_CALLBACKS,
  ADMIN_DATABASE,
  ADMIN_PAYLOAD_KEYS,
  ADMIN_PAYOUTS,
  ADMIN_TEMPORAL,
  API,
  MIGRATE,
  WORKER,
} from './processes';
import { effectiveQuoteSource, quoteSourceRules, type QuoteSourceName } from './quote';
import { payloadKeyRules } from './shared';
import type { ConfigRule } from './values';
import { VARIABLES, type Variable } from './variables';

/**
 * Every setting of the service's processes, and their loaders: each variable is defined once
 * (VARIABLES, from one module per concern: shared, api-process, quote, worker-process, chain,
 * provider, api-pix, callbacks), and each process reads and validates only the ones it uses
 * (processes.ts), so a variable one process needs never stops another. Read from the environment
 * once, by the process's composition root in src/main/. Defaults are the local stack
 * (docs/decisions.md D2), so `npm start` needs no env at all; a bad value stops the process with a
 * message that names the variable. docs/configuration.md lists them with the processes that read
 * them (a test compares the two).
 */

/** The rules across variables, in the order their problems are reported. */
const RULES: readonly ConfigRule[] = [
  treasuryRules,
  quoteSourceRules,
  apiPixRules,
  codecRules,
  payloadKeyRules,
];

export class ConfigError extends Error {}

function schemaOf<K extends Variable>(names: readonly K[]) {
  const shape = Object.fromEntries(names.map((name) => [name, VARIABLES[name]])) as Pick<typeof VARIABLES, K>;
  const reads = new Set<string>(names);
  return z.object(shape).superRefine((env: Record<string, unknown>, ctx) => {
    for (const rule of RULES) for (const issue of rule(env, reads)) ctx.addIssue(issue);
  });
}

/**
 * Address and namespace from the Temporal config file's profile (TEMPORAL_PROFILE, else `default`)
 * where the environment does not set them, as the `temporal` CLI resolves them. No file, no change.
 */
function withTemporalProfile(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  if (env.TEMPORAL_ADDRESS && env.TEMPORAL_NAMESPACE) return env;
  let profile: { address?: string; namespace?: string };
  try {
    profile = loadClientConfigProfile({ overrideEnvVars: temporalConfigEnv(env) });
  } catch (err) {
    throw new ConfigError(
      `invalid configuration: TEMPORAL_PROFILE ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  return {
    ...env,
    TEMPORAL_ADDRESS: env.TEMPORAL_ADDRESS || profile.address,
    TEMPORAL_NAMESPACE: env.TEMPORAL_NAMESPACE || profile.namespace,
  };
}

/** The loader of one process (or one part of the admin CLI): its variables, validated. */
function loaderOf<K extends Variable>(names: readonly K[]) {
  const schema = schemaOf(names);
  const readsTemporal = names.some((name) => name === 'TEMPORAL_ADDRESS');
  return (env: NodeJS.ProcessEnv = process.env): z.infer<typeof schema> => {
    const parsed = schema.safeParse(readsTemporal ? withTemporalProfile(env) : env);
    if (parsed.success) return parsed.data;
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || '(env)'} ${issue.message}`,
    );
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  };
}

const loadApiSettings = loaderOf(API);
/**
 * The api's settings. In treasury mode it needs the treasury's address; given only the worker's key
 * (one environment for both processes), the address is derived from it and the key is not kept.
 */
export const loadApiConfig = (
  env: NodeJS.ProcessEnv = process.env,
): ReturnType<typeof loadApiSettings> & { QUOTE_SOURCE: QuoteSourceName } => {
  const key = env.TREASURY_PRIVATE_KEY;
  const settings =
    env.TREASURY_ADDRESS || !key || !/^0x[0-9a-fA-F]{64}$/.test(key)
      ? loadApiSettings(env)
      : loadApiSettings({ ...env, TREASURY_ADDRESS: privateKeyToAddress(key as `0x${string}`) });
  return { ...settings, QUOTE_SOURCE: effectiveQuoteSource(settings) };
};
export const loadWorkerConfig = loaderOf(WORKER);
export const loadMigrateConfig = loaderOf(MIGRATE);
export const loadAdminDatabaseConfig = loaderOf(ADMIN_DATABASE);
export const loadAdminTemporalConfig = loaderOf(ADMIN_TEMPORAL);
export const loadAdminPayloadKeysConfig = loaderOf(ADMIN_PAYLOAD_KEYS);
export const loadAdminCallbacksConfig = loaderOf(ADMIN_CALLBACKS);
export const loadAdminPayoutsConfig = loaderOf(ADMIN_PAYOUTS);
export const loadAdminApiPixConfig = loaderOf(ADMIN_API_PIX);

export type ApiConfig = ReturnType<typeof loadApiConfig>;
export type WorkerConfig = ReturnType<typeof loadWorkerConfig>;
