import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

// What the launcher may learn about other processes from /proc (Linux). Everything here answers
// "don't know" (undefined, []) rather than throwing: a process can vanish between two reads, and
// another user's process may not be readable at all.

/** The process's arguments, argv[0] first; undefined when it is gone or not readable. */
export function commandLine(pid: number): string[] | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return raw ? raw.replace(/\0$/, '').split('\0') : undefined;
  } catch {
    return undefined;
  }
}

/** Fields of /proc/<pid>/stat after the command name: [state, ppid, ...]. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Running: exists and is not a zombie waiting to be reaped by someone else. */
export function isRunning(pid: number): boolean {
  const state = statFields(pid)?.[0];
  return state !== undefined && state !== 'Z' && state !== 'X';
}

/**
 * When the process started (clock ticks since boot): with the pid, an identity that a later
 * process reusing the pid does not share.
 */
export function startTime(pid: number): string | undefined {
  return statFields(pid)?.[19];
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

/** The process listening on 127.0.0.1:port (or on every address), when /proc shows it. */
export function portHolder(port: number): { pid: number; command: string } | undefined {
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
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m && inodes.has(m[1]!)) return { pid, command: (commandLine(pid) ?? ['?']).join(' ') };
      } catch {
        // The fd closed meanwhile.
      }
    }
  }
  return undefined;
}

/** Resolves once the process is gone (or a zombie), false if still there after `timeoutMs`. */
export async function waitUntilGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isRunning(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}
