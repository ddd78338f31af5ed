import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { workerHealthHandler, type WorkerState } from '../../src/observability/worker-health';

// What each Temporal worker state answers on the worker's probes (the process test,
// test/ops/worker-lifecycle.test.ts, sees RUNNING and a drain on the real worker).

describe('worker /healthz and /readyz', () => {
  let state: WorkerState = 'INITIALIZED';
  const handler = workerHealthHandler(() => state);
  const server = createServer((req, res) => {
    void handler(req, res).then((served) => {
      if (!served) res.writeHead(404).end();
    });
  });
  let base: string;
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it.each([
    ['INITIALIZED', 200, 503],
    ['RUNNING', 200, 200],
    ['STOPPING', 200, 503],
    ['DRAINING', 200, 503],
    ['DRAINED', 200, 503],
    ['STOPPED', 200, 503],
    ['FAILED', 503, 503],
  ] as const)('%s: live %d, ready %d', async (now, live, ready) => {
    state = now;
    const [healthz, readyz] = await Promise.all([fetch(`${base}/healthz`), fetch(`${base}/readyz`)]);
    expect([healthz.status, readyz.status]).toEqual([live, ready]);
    expect(((await readyz.json()) as { worker: string }).worker).toBe(now);
    expect(readyz.headers.get('cache-control')).toBe('no-store');
  });

  it('leaves other paths and methods to the next handler', async () => {
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
    expect((await fetch(`${base}/readyz`, { method: 'POST' })).status).toBe(404);
  });
});
