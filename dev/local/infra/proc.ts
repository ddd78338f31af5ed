import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';

// What the launcher may learn about other processes from /proc (Linux). Everything here answers
// "don't know" (undefined, []) rather than throwing: a process can vanish between two reads, and
// another user's process may not be readable at all.

/** The process's arguments, argv[0] first; undefined when it is gone or not readable. */
export function commandLine(pid: number): string[] | undefined {
  // A leader that has exited reads as empty while its other threads still run: ask one of them.
  const read = (dir: string | undefined) => {
    try {
      const raw = dir ? readFileSync(`${dir}/cmdline`, 'utf8') : '';
      return raw ? raw.replace(/\0$/, '').split('\0') : undefined;
    } catch {
      return undefined; // gone, or another user's
    }
  };
  return read(`/proc/${pid}`) ?? read(liveThreadDir(pid));
}

/**
 * /proc/<pid>/stat (or one of its threads' stat): the command name, which outlives the command line
 * of a process on its way out, and the fields after it: [state, ppid, ...].
 */
function readStat(dir: string): { name: string; fields: string[] } | undefined {
  try {
    const stat = readFileSync(`${dir}/stat`, 'utf8');
    const end = stat.lastIndexOf(')');
    return { name: stat.slice(stat.indexOf('(') + 1, end), fields: stat.slice(end + 2).split(' ') };
  } catch {
    return undefined;
  }
}

const statFields = (dir: string) => readStat(dir)?.fields;

const exited = (state: string | undefined) => state === undefined || state === 'Z' || state === 'X';

/**
 * /proc/<pid>/task/<tid> of a thread of the process that has not exited, when its leader has. A
 * thread-group leader reads as a zombie as soon as its own thread ends, while the other threads
 * still run and still hold the process's files and sockets: a Go server killed by a signal (SIGPIPE
 * once the launcher that read its output is gone) is in that state for a few milliseconds, and on two
 * busy cores that outlasted the launcher's port check. Such a thread may already have let go of its
 * memory (no command line, no program), but its fd folder still lists the sockets.
 */
function liveThreadDir(pid: number): string | undefined {
  if (!exited(statFields(`/proc/${pid}`)?.[0])) return undefined;
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  return tids.map((tid) => `/proc/${pid}/task/${tid}`).find((dir) => !exited(statFields(dir)?.[0]));
}

/**
 * Running: some thread of it has not exited. A zombie waiting to be reaped by someone else is not
 * running; a leader that has exited while its other threads still run is.
 */
export function isRunning(pid: number): boolean {
  const state = statFields(`/proc/${pid}`)?.[0];
  if (state === undefined) return false;
  return !exited(state) || liveThreadDir(pid) !== undefined;
}

/**
 * When the process started (clock ticks since boot): with the pid, an identity that a later
 * process reusing the pid does not share.
 */
export function startTime(pid: number): string | undefined {
  return statFields(`/proc/${pid}`)?.[19];
}

export function allPids(): number[] {
  try {
    return readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .map(Number);
  } catch {
    return [];
  }
}

export interface PortHolder {
  pid: number;
  /** Its command line; `<name> (exiting)` when its last threads have already let go of it. */
  command: string;
  /** Its leader thread has exited and the rest are on their way out: the port is about to be free. */
  exiting: boolean;
  /**
   * Its program file is gone with its folder: the process outlived the checkout it ran from, as the
   * servers of a launcher killed with SIGKILL do when that checkout is then deleted.
   */
  programDeleted: boolean;
}

/** The process listening on 127.0.0.1:port (or on every address), when /proc shows it. */
export function portHolder(port: number): PortHolder | undefined {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // local_address is HEXIP:HEXPORT, st 0A is LISTEN, the socket inode is column 9.
      if (cols[3] === '0A' && cols[1]?.endsWith(`:${port.toString(16).toUpperCase().padStart(4, '0')}`))
        inodes.add(cols[9]!);
    }
  }
  if (inodes.size === 0) return undefined;
  for (const pid of allPids()) {
    // An exited leader's fd folder is empty; its running threads' folders still list the files.
    const exitingThread = liveThreadDir(pid);
    const dir = exitingThread ?? `/proc/${pid}`;
    let fds: string[];
    try {
      fds = readdirSync(`${dir}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`${dir}/fd/${fd}`));
        if (m && inodes.has(m[1]!))
          return {
            pid,
            command: commandLine(pid)?.join(' ') ?? `${readStat(`/proc/${pid}`)?.name ?? '?'} (exiting)`,
            exiting: exitingThread !== undefined,
            programDeleted: programDeleted(dir),
          };
      } catch {
        // The fd closed meanwhile.
      }
    }
  }
  return undefined;
}

/**
 * Its program file and the folder it was in are gone. A package upgrade also deletes a running
 * server's program file (`/usr/lib/postgresql/16/bin/postgres (deleted)`), but leaves its folder.
 */
function programDeleted(dir: string): boolean {
  try {
    const exe = readlinkSync(`${dir}/exe`);
    return exe.endsWith(' (deleted)') && !existsSync(path.dirname(exe.slice(0, -' (deleted)'.length)));
  } catch {
    return false;
  }
}

/** Resolves once no thread of the process runs (it is gone, or a zombie), false if one still runs after `timeoutMs`. */
export async function waitUntilGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isRunning(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}
