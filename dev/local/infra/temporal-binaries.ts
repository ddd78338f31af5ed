import { accessSync, constants, existsSync } from 'node:fs';
import path from 'node:path';

// Temporal's dev server and time-skipping test server, as provisioned by scripts/provision.sh from
// package registries. `undefined` means "nothing provisioned": callers then let the Temporal SDK
// download the server itself, which works wherever GitHub is reachable.

/** The Temporal CLI (`temporal server start-dev`): TEMPORAL_CLI_PATH, else .tools/bin/temporal. */
export function resolveTemporalCliPath(): string | undefined {
  return resolveExecutable('TEMPORAL_CLI_PATH', path.join('.tools', 'bin', 'temporal'));
}

/** The time-skipping test server wrapper: TEMPORAL_TEST_SERVER_PATH, else .tools/temporal-test-server/. */
export function resolveTestServerPath(): string | undefined {
  return resolveExecutable(
    'TEMPORAL_TEST_SERVER_PATH',
    path.join('.tools', 'temporal-test-server', 'temporal-test-server'),
  );
}

function resolveExecutable(envVar: string, relativeToRepo: string): string | undefined {
  const fromEnv = process.env[envVar];
  if (fromEnv) {
    // An explicit setting that does not work is a configuration error, not a reason to download.
    try {
      accessSync(fromEnv, constants.X_OK);
    } catch {
      throw new Error(`${envVar}=${fromEnv} is not an executable file`);
    }
    return path.resolve(fromEnv);
  }
  const provisioned = path.join(repoRoot(), relativeToRepo);
  return existsSync(provisioned) ? provisioned : undefined;
}

let cachedRoot: string | undefined;

/**
 * The directory holding the project's package.json, found by walking up from this file so it works
 * from src/ (tsx, jest) and from the compiled dist/ tree alike.
 */
export function repoRoot(): string {
  if (cachedRoot) return cachedRoot;
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return (cachedRoot = dir);
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${__dirname}`);
  }
}
