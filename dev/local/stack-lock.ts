import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isRunning, startTime } from './infra/proc';

// One stack per data folder (per checkout, unless LOCAL_DATA_DIR says otherwise): a second
// `npm start` must neither share nor disturb the running one's servers and files.

export interface LockHolder {
  pid: number;
  /** /proc start time of that pid: a later process reusing the pid does not hold the lock. */
  startTime: string;
  apiUrl: string;
}

const lockFile = (dataDir: string) => path.join(dataDir, 'launcher.lock');

function read(file: string): LockHolder | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as LockHolder;
  } catch {
    return undefined;
  }
}

/** A launcher that holds the lock and is still running (validated against /proc), if any. */
export function runningLauncher(dataDir: string): LockHolder | undefined {
  const holder = read(lockFile(dataDir));
  if (!holder || !isRunning(holder.pid) || startTime(holder.pid) !== holder.startTime) return undefined;
  return holder;
}

export type LockResult =
  { acquired: true; release(): void; stale?: LockHolder } | { acquired: false; holder: LockHolder };

/**
 * Takes the lock for this process, or names the launcher that has it. A lock left by a launcher
 * that was SIGKILLed is not believed: its pid is gone, or now belongs to another process.
 */
export function acquireLock(dataDir: string, apiUrl: string): LockResult {
  const file = lockFile(dataDir);
  const me: LockHolder = { pid: process.pid, startTime: startTime(process.pid) ?? '', apiUrl };
  let stale: LockHolder | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, `${JSON.stringify(me)}\n`, { flag: 'wx' });
      const release = () => {
        if (read(file)?.pid === process.pid) rmSync(file, { force: true });
      };
      return { acquired: true, release, ...(stale ? { stale } : {}) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 2) throw err;
    }
    const holder = runningLauncher(dataDir);
    if (holder) return { acquired: false, holder };
    stale = read(file);
    rmSync(file, { force: true });
  }
}
