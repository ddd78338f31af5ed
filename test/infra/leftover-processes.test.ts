import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { commandLine, isRunning, portHolder, waitUntilGone } from '../../dev/local/infra/proc';
import { isListening } from '../../dev/local/infra/ports';
import { assertPortsFree } from '../../dev/local/stack-settings';
import { until } from '../support/until';

// What a launcher finds of processes left behind by an earlier one (dev/local/infra/proc.ts,
// dev/local/stack-settings.ts), with real processes in the states the kernel puts them in. Every
// helper process reads its stdin and ends when it closes, so none outlives a killed jest.

/** Python's main thread can end by itself; without python3 the two describes that need it are skipped, loudly. */
const hasPython = spawnSync('python3', ['-c', '']).status === 0;
if (!hasPython)
  console.warn('python3 not found: the leader-thread cases of leftover-processes.test.ts are skipped');
const describeWithPython = hasPython ? describe : describe.skip;

/**
 * A process whose leader thread has exited while another thread still runs and holds a listening
 * socket: what a Go server killed by a signal looks like for a few milliseconds. A CI run's launcher
 * took such a Temporal dev server for gone (its leader read as a zombie) and then found its port busy.
 * Python's main thread can end itself with pthread_exit, which Node's cannot.
 */
const LEADER_EXITS = [
  'import ctypes, socket, sys, threading',
  's = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()',
  'print(s.getsockname()[1], flush=True)',
  'threading.Thread(target=sys.stdin.read).start()',
  'ctypes.CDLL(None).pthread_exit(None)',
].join('\n');

/** A node program that listens on a free port of 127.0.0.1 and prints it. */
const LISTEN = [
  "const s = require('node:net').createServer().listen(0, '127.0.0.1', () => console.log(s.address().port));",
  "process.stdin.resume().on('end', () => process.exit());",
].join(' ');

/** Spawns `command` and resolves with the port it prints, or rejects if it cannot start or exits first. */
async function listening(command: string, args: string[]): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      reject(new Error(`${command} exited (${code ?? signal}) before listening`)),
    );
    child.stdout!.once('data', (line: Buffer) => resolve(Number(line.toString().trim())));
  });
  return { child, port };
}

const leaderState = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
};

const leaderExited = async () => {
  const started = await listening('python3', ['-c', LEADER_EXITS]);
  const pid = started.child.pid!;
  await until('the leader thread to exit', () => (leaderState(pid) === 'Z' ? true : undefined), {
    timeoutMs: 10_000,
  });
  return { ...started, pid };
};

const stop = (child: ChildProcess | undefined) => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
};

describeWithPython('dev/local/infra/proc: a process whose leader thread has exited', () => {
  let child: ChildProcess;
  let pid: number;
  let port: number;

  beforeAll(async () => {
    ({ child, pid, port } = await leaderExited());
  });
  afterAll(() => stop(child));

  it('is running, with its arguments and its socket, while another thread runs', async () => {
    expect(await isListening('127.0.0.1', port)).toBe(true);
    expect(isRunning(pid)).toBe(true);
    expect(commandLine(pid)).toEqual(expect.arrayContaining(['-c', LEADER_EXITS]));
    expect(portHolder(port)).toEqual({
      pid,
      command: expect.stringContaining('pthread_exit'),
      exiting: true,
      programDeleted: false,
    });
    expect(await waitUntilGone(pid, 300)).toBe(false);
  });

  it('is gone, and its port free, once its last thread has exited', async () => {
    const exited = once(child, 'exit');
    process.kill(pid, 'SIGKILL');
    expect(await waitUntilGone(pid, 10_000)).toBe(true);
    expect(isRunning(pid)).toBe(false);
    expect(await isListening('127.0.0.1', port)).toBe(false);
    await exited;
  });
});

describeWithPython('dev/local/stack-settings: a port held by a server on its way out', () => {
  let child: ChildProcess | undefined;
  afterAll(() => stop(child));

  it('is waited for, not refused, when it lets go within the wait', async () => {
    const held = await leaderExited();
    child = held.child;
    const check = assertPortsFree([
      { what: 'Temporal dev server', port: held.port, variable: 'LOCAL_TEMPORAL_PORT' },
    ]);
    // The check has seen the port busy and its holder exiting; the last thread then ends.
    setTimeout(() => held.child.stdin!.end(), 1_000);
    await expect(check).resolves.toBeUndefined();
    expect(await isListening('127.0.0.1', held.port)).toBe(false);
  });
});

describe('dev/local/infra/proc: a zombie nobody reaps', () => {
  let shell: ChildProcess;
  let zombie: number;

  beforeAll(async () => {
    // The shell starts a node child (multithreaded, as every node is) and becomes `cat`, which never
    // reaps it.
    const script = `'${process.execPath}' -e 'process.exit(0)' & echo $!; exec cat >/dev/null`;
    shell = spawn('sh', ['-c', script], { stdio: ['pipe', 'pipe', 'inherit'] });
    const [line] = (await once(shell.stdout!, 'data')) as [Buffer];
    zombie = Number(line.toString().trim());
    await until('the child to exit', () => (leaderState(zombie) === 'Z' ? true : undefined), {
      timeoutMs: 10_000,
    });
  });
  afterAll(() => stop(shell));

  it('is not running, and has no command line', async () => {
    expect(isRunning(zombie)).toBe(false);
    expect(commandLine(zombie)).toBeUndefined();
    expect(await waitUntilGone(zombie, 0)).toBe(true);
  });
});

/** A node program run from its own copy in a fresh folder, listening; the caller deletes the copy. */
async function listeningCopy(prefix: string) {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  const program = path.join(dir, 'node');
  try {
    linkSync(process.execPath, program);
  } catch {
    copyFileSync(process.execPath, program); // another filesystem
  }
  return { dir, program, ...(await listening(program, ['-e', LISTEN])) };
}

// What a second checkout's `npm start` meets when the first checkout's launcher was killed with
// SIGKILL and the checkout then deleted: its servers still listen, from program files that are gone.
// A package upgrade deletes a running server's program file too, but not its folder: no hint then.
describe('dev/local/stack-settings: a port held by a process whose program file is deleted', () => {
  const servers: Array<{ dir: string; child: ChildProcess }> = [];
  afterAll(() => {
    for (const { dir, child } of servers) {
      stop(child);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is named, with how to stop it, and left running, when its folder is gone too', async () => {
    const server = await listeningCopy('deleted-checkout-');
    servers.push(server);
    rmSync(server.dir, { recursive: true, force: true });
    const pid = server.child.pid!;
    expect(portHolder(server.port)).toMatchObject({ pid, exiting: false, programDeleted: true });
    const refused = assertPortsFree([
      { what: 'PostgreSQL', port: server.port, variable: 'LOCAL_POSTGRES_PORT' },
    ]);
    await expect(refused).rejects.toThrow(
      `PostgreSQL: port ${server.port} on 127.0.0.1 is already in use by pid ${pid} (`,
    );
    await expect(refused).rejects.toThrow(
      `; its program and its folder are deleted (left by a removed checkout?): stop it with \`kill ${pid}\`, or set LOCAL_POSTGRES_PORT to use another port`,
    );
    expect(isRunning(pid)).toBe(true);
  });

  it('is named without the hint when only the file is gone (replaced in place)', async () => {
    const server = await listeningCopy('upgraded-package-');
    servers.push(server);
    rmSync(server.program);
    expect(portHolder(server.port)).toMatchObject({ pid: server.child.pid, programDeleted: false });
    await expect(
      assertPortsFree([{ what: 'PostgreSQL', port: server.port, variable: 'LOCAL_POSTGRES_PORT' }]),
    ).rejects.toThrow(/\); set LOCAL_POSTGRES_PORT to use another port$/);
  });

  it('names a running program without the hint', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const own = (server.address() as net.AddressInfo).port;
    try {
      const refused = assertPortsFree([{ what: 'anvil', port: own, variable: 'LOCAL_ANVIL_PORT' }]);
      await expect(refused).rejects.toThrow(
        `anvil: port ${own} on 127.0.0.1 is already in use by pid ${process.pid} (`,
      );
      await expect(refused).rejects.toThrow(/\); set LOCAL_ANVIL_PORT to use another port$/);
    } finally {
      server.close();
    }
  });
});

// Root under a 0700 home runs PostgreSQL from a shared copy of its binaries, so a removed checkout's
// server still has its program file: its data, a relocated cluster whose checkout is gone, shows it.
describe('dev/local/stack-settings: a port held by the PostgreSQL of a removed checkout (relocated cluster)', () => {
  let root: string;
  let child: ChildProcess;
  let port: number;
  const claim = () => ({ what: 'PostgreSQL', port, variable: 'LOCAL_POSTGRES_PORT' });

  beforeAll(async () => {
    root = mkdtempSync(path.join(os.tmpdir(), 'relocated-clusters-'));
    const cluster = path.join(root, 'postgres-0a1b2c');
    mkdirSync(cluster);
    const requested = path.join(root, 'removed-checkout', '.data', 'postgres');
    writeFileSync(`${cluster}.owner.json`, JSON.stringify({ requested, id: '0a1b2c' }));
    // Stands in for `postgres -D <cluster>`: what the sign reads is the command line.
    ({ child, port } = await listening(process.execPath, ['-e', LISTEN, '--', '-D', cluster]));
  });

  afterAll(() => {
    stop(child);
    rmSync(root, { recursive: true, force: true });
  });

  it('is named, with the checkout it served and how to stop it', async () => {
    const requested = path.join(root, 'removed-checkout', '.data', 'postgres');
    await expect(assertPortsFree([claim()], root)).rejects.toThrow(
      `; its data is the PostgreSQL cluster of a checkout that no longer exists or whose data was removed (${requested}): ` +
        `stop it with \`kill ${child.pid}\`, or set LOCAL_POSTGRES_PORT to use another port`,
    );
  });

  it('names the same server without the hint while its checkout exists', async () => {
    const checkout = path.join(root, 'removed-checkout', '.data');
    mkdirSync(checkout, { recursive: true });
    writeFileSync(path.join(checkout, 'checkout-id'), '0a1b2c\n');
    await expect(assertPortsFree([claim()], root)).rejects.toThrow(
      /\); set LOCAL_POSTGRES_PORT to use another port$/,
    );
  });

  it('names a server of a cluster from before checkout ids without the hint (nothing shows its checkout gone)', async () => {
    const old = path.join(root, 'postgres-0123456789ab');
    mkdirSync(old);
    const server = await listening(process.execPath, ['-e', LISTEN, '--', '-D', old]);
    try {
      const refused = assertPortsFree(
        [{ what: 'PostgreSQL', port: server.port, variable: 'LOCAL_POSTGRES_PORT' }],
        root,
      );
      await expect(refused).rejects.toThrow(/\); set LOCAL_POSTGRES_PORT to use another port$/);
    } finally {
      stop(server.child);
    }
  });

  it('takes a clusters folder it cannot read for no sign, and still refuses with the port', async () => {
    const notAFolder = path.join(root, 'not-a-folder');
    writeFileSync(notAFolder, '');
    const server = await listening(process.execPath, [
      '-e',
      LISTEN,
      '--',
      '-D',
      path.join(notAFolder, 'postgres-0a1b2c'),
    ]);
    try {
      const refused = assertPortsFree(
        [{ what: 'PostgreSQL', port: server.port, variable: 'LOCAL_POSTGRES_PORT' }],
        notAFolder,
      );
      await expect(refused).rejects.toThrow(
        /^PostgreSQL: port \d+ on 127\.0\.0\.1 is already in use by pid \d+ \(.*\); set LOCAL_POSTGRES_PORT/,
      );
    } finally {
      stop(server.child);
    }
  });
});
