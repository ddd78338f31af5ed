import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { commandLine, isRunning, portHolder, waitUntilGone } from '../../dev/local/infra/proc';
import { isListening } from '../../dev/local/infra/ports';
import { until } from '../support/until';

// A process whose leader thread has exited while another thread still runs and holds a listening
// socket: what a Go server killed by a signal looks like for a moment. A CI run's launcher took such
// a Temporal dev server for gone (its leader read as a zombie) and then found its port still busy.
// Python's main thread can end itself with pthread_exit, which Node's cannot.
const LEADER_EXITS = [
  'import ctypes, socket, sys, threading, time',
  's = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()',
  'print(s.getsockname()[1], flush=True)',
  'threading.Thread(target=time.sleep, args=(600,)).start()',
  'ctypes.CDLL(None).pthread_exit(None)',
].join('\n');

const leaderState = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
};

describe('dev/local/infra/proc: a process whose leader thread has exited', () => {
  let child: ChildProcess;
  let pid: number;
  let port: number;

  beforeAll(async () => {
    child = spawn('python3', ['-c', LEADER_EXITS], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [line] = (await once(child.stdout!, 'data')) as [Buffer];
    port = Number(line.toString().trim());
    pid = child.pid!;
    await until('the leader thread to exit', () => (leaderState(pid) === 'Z' ? true : undefined));
  });

  afterAll(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  it('is running, with its arguments and its socket, while another thread runs', async () => {
    expect(await isListening('127.0.0.1', port)).toBe(true);
    expect(isRunning(pid)).toBe(true);
    expect(commandLine(pid)).toEqual(expect.arrayContaining(['-c', LEADER_EXITS]));
    expect(portHolder(port)).toEqual({ pid, command: expect.stringContaining('pthread_exit') });
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
