import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from './temporal-binaries';

// The Temporal server's dynamic config, one file for every server the project runs
// (ops/temporal/dynamicconfig.yaml): docker-compose.yml mounts it, the bench's production server reads
// it, and the dev server gets each entry as a flag.

/** The file's path in this checkout. */
export function temporalDynamicConfigFile(): string {
  return path.join(repoRoot(), 'ops', 'temporal', 'dynamicconfig.yaml');
}

/**
 * The file as `start-dev` flags: `--dynamic-config-value key=<JSON value>` per entry. A flag holds one
 * value for the whole server, so an entry with constraints (a namespace, a task queue) or several
 * values is refused rather than widened.
 */
export function devServerDynamicConfigArgs(file = temporalDynamicConfigFile()): string[] {
  const entries = (parse(readFileSync(file, 'utf8')) ?? {}) as Record<string, unknown>;
  return Object.entries(entries).flatMap(([key, values]) => {
    const only =
      Array.isArray(values) && values.length === 1 ? (values[0] as Record<string, unknown>) : undefined;
    if (!only || !('value' in only) || Object.keys(only).some((k) => k !== 'value')) {
      throw new Error(
        `${file}: ${key} must be one value without constraints for the dev server's --dynamic-config-value`,
      );
    }
    return ['--dynamic-config-value', `${key}=${JSON.stringify(only.value)}`];
  });
}
