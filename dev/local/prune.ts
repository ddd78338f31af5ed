import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isRunning } from './infra/proc';
import { leftoverClusters, removeCluster, ROOT_STATE_DIR } from './infra/postgres-relocation';

/**
 * `npm run local:prune`: removes the relocated PostgreSQL data (root under a 0700 home) of
 * checkouts that no longer exist, which `npm start` reports but never reuses or deletes itself.
 * A cluster with a running server is left alone.
 */
async function main(): Promise<void> {
  const leftovers = leftoverClusters();
  if (leftovers.length === 0) {
    process.stdout.write(`no leftover PostgreSQL data in ${ROOT_STATE_DIR}\n`);
    return;
  }
  for (const { dir, requested } of leftovers) {
    const pid = postmasterPid(dir);
    if (pid !== undefined && isRunning(pid)) {
      process.stdout.write(`kept ${dir}: a PostgreSQL server (pid ${pid}) still runs on it\n`);
      continue;
    }
    await removeCluster(dir);
    process.stdout.write(`removed ${dir} (was ${requested ?? 'a checkout from before checkout ids'})\n`);
  }
}

function postmasterPid(dir: string): number | undefined {
  try {
    return Number(readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return undefined;
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
