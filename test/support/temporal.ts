import {
  TestWorkflowEnvironment,
  type LocalTestWorkflowEnvironmentOptions,
  type TimeSkippingTestWorkflowEnvironmentOptions,
} from '@temporalio/testing';
import { resolveTemporalCliPath, resolveTestServerPath } from '../../dev/local/infra/temporal-binaries';
import { devServerDynamicConfigArgs } from '../../dev/local/infra/temporal-dynamic-config';
import { registerSearchAttributes } from '../../src/temporal/search-attribute-registry';

// Temporal test environments backed by the servers dev/provision.sh builds from package registries.
// With nothing provisioned (and no explicit executable in opts), the SDK's default download is used,
// which works wherever GitHub is reachable.

/**
 * Java test server with time skipping: timers and sleeps in workflows pass instantly while a test
 * awaits a result. One per test file; do not share it between concurrent tests. The payout search
 * attributes are registered on it, since the payout workflow upserts them and this server refuses
 * keys it does not know.
 */
export async function createTimeSkippingEnv(
  opts: TimeSkippingTestWorkflowEnvironmentOptions = {},
): Promise<TestWorkflowEnvironment> {
  const path = resolveTestServerPath();
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    ...opts,
    server: {
      ...(path ? { executable: { type: 'existing-path', path } } : {}),
      ...opts.server,
    },
  });
  try {
    await registerSearchAttributes(env.connection.operatorService, env.namespace ?? 'default');
  } catch (err) {
    await env.teardown();
    throw err;
  }
  return env;
}

/**
 * A real Temporal server (CLI dev server, in memory) on a free port: full server semantics, real time.
 * Search attributes are passed as `server.searchAttributes` (defineSearchAttributeKey objects).
 */
export function createDevServerEnv(
  opts: LocalTestWorkflowEnvironmentOptions = {},
): Promise<TestWorkflowEnvironment> {
  const path = resolveTemporalCliPath();
  return TestWorkflowEnvironment.createLocal({
    ...opts,
    server: {
      ...(path ? { executable: { type: 'existing-path', path } } : {}),
      ...opts.server,
      // The project's dynamic config, as the local stack's and compose's servers run it.
      extraArgs: [...devServerDynamicConfigArgs(), ...(opts.server?.extraArgs ?? [])],
    },
  });
}
