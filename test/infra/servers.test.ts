import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import pg from 'pg';
import { freePort, isListening } from '../../dev/local/infra/ports';
import { resolveTemporalCliPath, resolveTestServerPath } from '../../dev/local/infra/temporal-binaries';
import { startTemporalDevServer } from '../../dev/local/infra/temporal-dev-server';
import { devServerDynamicConfigArgs } from '../../dev/local/infra/temporal-dynamic-config';
import { testDatabaseUrl } from '../support/env';
import { createDevServerEnv, createTimeSkippingEnv } from '../support/temporal';

// The real servers every other suite stands on: if one of these fails, start with `npm run provision`.

const DAY_MS = 24 * 60 * 60 * 1000;

test('the Temporal servers are provisioned, so no test depends on a download', () => {
  expect(resolveTemporalCliPath()).toEqual(expect.any(String));
  expect(resolveTestServerPath()).toEqual(expect.any(String));
});

test('the time-skipping test server starts and skips a day at once', async () => {
  const env = await createTimeSkippingEnv();
  try {
    expect(env.supportsTimeSkipping).toBe(true);
    const before = await env.currentTimeMs();
    // A day slept in real time would outlast the test's timeout: returning at all is the skip.
    await env.sleep(DAY_MS);
    expect((await env.currentTimeMs()) - before).toBeGreaterThanOrEqual(DAY_MS);
  } finally {
    await env.teardown();
  }
});

test('the dev server test env starts with search attributes registered', async () => {
  const env = await createDevServerEnv({
    server: { searchAttributes: [defineSearchAttributeKey('PayoutStatus', SearchAttributeType.KEYWORD)] },
  });
  try {
    const { customAttributes } = await env.connection.operatorService.listSearchAttributes({
      namespace: 'default',
    });
    expect(customAttributes).toHaveProperty('PayoutStatus');
  } finally {
    await env.teardown();
  }
});

describe('startTemporalDevServer', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'payouts-dev-server-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('keeps workflows in its SQLite file across a restart and frees its port on stop', async () => {
    const port = await freePort();
    const opts = {
      port,
      dbFile: path.join(dir, 'temporal.sqlite'),
      searchAttributes: { PayoutStatus: 'Keyword' } as const,
    };
    const execution = { workflowId: 'survives-restart' };

    const first = await startTemporalDevServer(opts);
    expect(first.address).toBe(`127.0.0.1:${port}`);
    expect(first.uiUrl).toBeUndefined();
    await startWorkflowNobodyRuns(first.address, execution.workflowId);
    await first.stop();
    expect(await isListening('127.0.0.1', port)).toBe(false);

    expect(await typeAfterRestart(opts, execution)).toBe('anything');
  });

  test('keeps its SQLite file in write-ahead-log mode, takes the project dynamic config, and starts again over the log a SIGKILLed server left', async () => {
    const port = await freePort();
    const opts = { port, dbFile: path.join(dir, 'killed.sqlite') };
    const execution = { workflowId: 'survives-kill' };

    const first = await startTemporalDevServer(opts);
    try {
      await startWorkflowNobodyRuns(first.address, execution.workflowId);
      // The file header's read and write versions are 2 in WAL mode (sqlite.org/fileformat2.html), and
      // the commit is in the log beside it when the server is killed.
      const header = await readFile(opts.dbFile);
      expect([header[18], header[19]]).toEqual([2, 2]);
      expect((await stat(`${opts.dbFile}-wal`)).size).toBeGreaterThan(0);
      // The project's dynamic config reaches the server (ops/temporal/dynamicconfig.yaml, D84).
      const argv = (await readFile(`/proc/${first.pid}/cmdline`, 'utf8')).split('\0');
      expect(argv).toEqual(expect.arrayContaining(devServerDynamicConfigArgs()));
      process.kill(first.pid!, 'SIGKILL');
      await first.exited;
    } finally {
      await first.stop();
    }

    expect(await typeAfterRestart(opts, execution)).toBe('anything');
  });

  test('refuses a port that is already taken instead of sharing that server', async () => {
    const running = await startTemporalDevServer({ port: await freePort() });
    try {
      const port = Number(running.address.split(':')[1]);
      await expect(startTemporalDevServer({ port })).rejects.toThrow(/already in use/);
    } finally {
      await running.stop();
    }
  });
});

test('the run-wide PostgreSQL answers, is UTF-8 and has the migrations applied', async () => {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    expect((await client.query('SHOW server_encoding')).rows[0].server_encoding).toBe('UTF8');
    const applied = await client.query('SELECT count(*)::int AS n FROM pgmigrations');
    expect(applied.rows[0].n).toBeGreaterThan(0);
  } finally {
    await client.end();
  }
});

/** A workflow on a task queue nobody polls: it stays open, in the server's database only. */
function startWorkflowNobodyRuns(address: string, workflowId: string): Promise<unknown> {
  return withConnection(address, (c) =>
    c.workflowService.startWorkflowExecution({
      namespace: 'default',
      workflowId,
      workflowType: { name: 'anything' },
      taskQueue: { name: 'nobody-polls' },
      requestId: workflowId,
    }),
  );
}

/** The workflow's type as a server started again on the same file finds it. */
async function typeAfterRestart(
  opts: Parameters<typeof startTemporalDevServer>[0],
  execution: { workflowId: string },
): Promise<string | null | undefined> {
  const server = await startTemporalDevServer(opts);
  try {
    const described = await withConnection(server.address, (c) =>
      c.workflowService.describeWorkflowExecution({ namespace: 'default', execution }),
    );
    return described.workflowExecutionInfo?.type?.name;
  } finally {
    await server.stop();
  }
}

async function withConnection<T>(address: string, fn: (c: Connection) => Promise<T>): Promise<T> {
  const connection = await Connection.connect({ address });
  try {
    return await fn(connection);
  } finally {
    await connection.close();
  }
}
