import { spawn } from 'node:child_process';
import path from 'node:path';
import { createPool } from '../../src/adapters/db/pool';
import { testDatabaseUrl } from '../support/env';
import { until } from '../support/until';

// A service process must survive PostgreSQL dropping the connection of a client it has checked out
// (a transaction between two statements, as the idempotency claim holds one): a restart or crash of
// the database does exactly that. pg emits 'error' on such a client, and the pool listens only on
// its idle clients; with no listener the event is an uncaught exception and the process exits. It
// runs in a child process so that an exit is observable and does not take jest down with it.

const ROOT = path.resolve(__dirname, '../..');

describe('pool: a checked-out client losing its connection', () => {
  it('does not crash the process; the pool serves the next query', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/db/fixtures/held-client.ts'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: testDatabaseUrl() },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<number | string | null>((resolve) =>
      child.once('exit', (code) => resolve(code)),
    );

    const pid = await until('the child holding a client', () => {
      if (child.exitCode !== null) throw new Error(`child: ${out}\n${err}`);
      const held = /checked-out (\d+)/.exec(out);
      return held ? Number(held[1]) : undefined;
    });
    const admin = createPool(testDatabaseUrl(), 1);
    try {
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    } finally {
      await admin.end();
    }
    child.stdin.end('go\n');
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      exited,
      new Promise<string>((r) => (timer = setTimeout(() => r('still running after 20 s'), 20_000))),
    ]);
    clearTimeout(timer);
    child.kill('SIGKILL');
    expect({ code, out: out.trim().split('\n').pop(), err: err.trim() }).toEqual({
      code: 0,
      out: expect.stringMatching(/^alive refused: .* then 1$/),
      err: '',
    });
  }, 60_000);
});
