import { readFileSync } from 'node:fs';
import path from 'node:path';
import { allPids, commandLine, isRunning, waitUntilGone } from './infra/proc';

// What a launcher that could not stop its parts (SIGKILL, the OOM killer) left running. Only what
// is provably this stack's own is touched: a postmaster whose postmaster.pid is in this stack's
// cluster, a Temporal or anvil server whose files are in this stack's data folder, a service the
// launcher marked with that folder. Anything else on our ports is someone else's, and is reported.

/** Added to the node services' arguments: marks them as this data folder's stack. */
export const launcherMark = (dataDir: string) => `--launcher-data=${dataDir}`;

export interface Leftover {
  what: string;
  pid: number;
  /** The signal that stops it cleanly, and how long that may take before SIGKILL. */
  signal: NodeJS.Signals;
  graceMs: number;
}

export function findLeftovers(dataDir: string, pgDataDir: string | undefined): Leftover[] {
  const found: Leftover[] = [];
  const services: Leftover[] = [];
  const servers: Leftover[] = [];
  for (const pid of allPids()) {
    if (pid === process.pid) continue;
    const argv = commandLine(pid);
    if (!argv) continue;
    const program = path.basename(argv[0] ?? '');
    if (argv.includes(launcherMark(dataDir))) {
      const entry = argv.find((a) => a.endsWith('.ts') && !a.startsWith('file:')) ?? program;
      services.push({ what: `service ${path.basename(entry)}`, pid, signal: 'SIGTERM', graceMs: 30_000 });
    } else if (
      (program === 'temporal' || program === 'anvil') &&
      argv.some((a) => a.startsWith(`${dataDir}${path.sep}`))
    ) {
      const what = program === 'temporal' ? 'Temporal dev server' : 'anvil';
      servers.push({ what, pid, signal: 'SIGTERM', graceMs: 10_000 });
    }
  }
  found.push(...services);
  const postmaster = pgDataDir ? leftoverPostmaster(pgDataDir) : undefined;
  if (postmaster) found.push({ what: 'PostgreSQL', pid: postmaster, signal: 'SIGINT', graceMs: 30_000 });
  // Temporal before anvil, the order a launcher stops them in.
  found.push(...servers.filter((s) => s.what !== 'anvil'), ...servers.filter((s) => s.what === 'anvil'));
  return found;
}

/** The postmaster of this cluster, when one runs: postmaster.pid names it, /proc confirms it. */
function leftoverPostmaster(pgDataDir: string): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(path.join(pgDataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return undefined;
  }
  const argv = Number.isInteger(pid) && pid > 0 ? commandLine(pid) : undefined;
  if (!argv || path.basename(argv[0] ?? '') !== 'postgres' || !isRunning(pid)) return undefined;
  return argv.includes(pgDataDir) ? pid : undefined;
}

/**
 * Stops each leftover in turn with its clean signal (SIGKILL only if that is ignored). One that not
 * even SIGKILL ends (stuck in the kernel) still holds this stack's data: the start is refused.
 */
export async function stopLeftovers(leftovers: Leftover[], say: (line: string) => void): Promise<void> {
  const stuck: string[] = [];
  for (const { what, pid, signal, graceMs } of leftovers) {
    const started = Date.now();
    try {
      process.kill(pid, signal);
    } catch {
      continue; // gone meanwhile
    }
    let how = signal;
    let gone = await waitUntilGone(pid, graceMs);
    if (!gone) {
      how = 'SIGKILL';
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone right after the wait gave up.
      }
      gone = await waitUntilGone(pid, 5_000);
    }
    const took = `${how}, ${((Date.now() - started) / 1000).toFixed(1)}s`;
    if (gone) say(`stopped ${what} (pid ${pid}) left running by an earlier launcher of this stack (${took})`);
    else
      stuck.push(
        `${what} (pid ${pid}) left running by an earlier launcher of this stack did not stop (${took}): ` +
          `it is stuck in the kernel (/proc/${pid}/stack shows where); a reboot ends it`,
      );
  }
  if (stuck.length > 0) throw new Error(stuck.join('\n'));
}
