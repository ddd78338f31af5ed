import { freePort } from '../../dev/local/infra/ports';
import type { ServiceProcess } from '../support/service-process';
import { useStack } from '../support/stack';
import { until } from '../support/until';

// The worker as a real process (src/worker.ts) on the test stack: its ops port answers liveness and
// readiness, and a SIGTERM drains it. A paid payout's settlement request is held at the provider
// while the worker is told to stop: the attempt already running must finish and its answer count
// (one settlement request), not be cancelled and retried on the next worker. (Our activities do
// not observe cancellation, so an attempt finishes even past WORKER_SHUTDOWN_GRACE_SECONDS, when the
// SDK cancels it; the grace keeps the SDK from cancelling at once any attempt that would observe it.)

const json = async (url: string) => {
  const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
};

describe('worker lifecycle: health, readiness, drain on SIGTERM', () => {
  const stack = useStack({ worker: false, proxyProvider: true });
  let worker: ServiceProcess;
  let ops: string;

  beforeAll(async () => {
    const port = await freePort();
    ops = `http://127.0.0.1:${port}`;
    worker = await stack.startProcess('worker', {
      WORKER_METRICS_PORT: String(port),
      WORKER_SHUTDOWN_GRACE_SECONDS: '30',
    });
  }, 120_000);

  it('is live and ready while it polls', async () => {
    await until('worker ready', async () =>
      (await json(`${ops}/readyz`)).status === 200 ? true : undefined,
    );
    expect(await json(`${ops}/healthz`)).toEqual({ status: 200, body: { status: 'ok', worker: 'RUNNING' } });
    expect(await json(`${ops}/readyz`)).toEqual({
      status: 200,
      body: { status: 'ready', worker: 'RUNNING' },
    });
  });

  it('on SIGTERM stops being ready, lets the running activity finish, and exits', async () => {
    const { apiKey } = await stack.createPartner('lifecycle');
    // The api creates the charge and starts the workflow (D81); the worker settles once it is paid.
    const { payout } = await stack.createPayout(apiKey);
    const held = stack.providerProxy!.hold('POST /settlements');
    await stack.pay(payout.pix_copy_paste);
    await held.arrived;

    const exited = worker.kill('SIGTERM');
    const draining = await until('worker not ready', async () => {
      const answer = await json(`${ops}/readyz`).catch(() => undefined);
      return answer && answer.status === 503 ? answer : undefined;
    });
    expect(draining.body.error).toMatch(/^not ready: worker (STOPPING|DRAINING|DRAINED)$/);
    // Draining is not dead: liveness holds, so an orchestrator does not kill it mid-drain.
    expect((await json(`${ops}/healthz`)).status).toBe(200);
    expect(worker.running).toBe(true);

    held.release();
    await exited;
    expect(worker.output.some((line) => line.includes('"msg":"worker stopped"'))).toBe(true);
    expect(worker.errors()).toEqual([]);

    // A worker of the next build picks the workflow up: the held attempt's answer is the payout's.
    await stack.startWorker();
    await stack.waitForStatus(apiKey, payout.id, ['COMPLETED'], 60_000);
    expect(stack.providerProxy!.settlementRequests().get(payout.id)).toBe(1);
  }, 120_000);
});
