import type { OpsHandler } from './ops-server';

/** The Temporal worker's lifecycle states (Worker.getState() of @temporalio/worker). */
export type WorkerState =
  'INITIALIZED' | 'RUNNING' | 'STOPPING' | 'DRAINING' | 'DRAINED' | 'STOPPED' | 'FAILED';

/**
 * /healthz and /readyz on the worker's ops port, for an orchestrator's liveness and readiness probes.
 * Live while the process serves HTTP and its worker has not failed (a FAILED worker never recovers:
 * restart it). Ready only while it polls: not yet RUNNING at start, nor once a SIGTERM began the drain,
 * so a rolling deploy counts a draining replica as gone while its running activities finish.
 */
export function workerHealthHandler(state: () => WorkerState): OpsHandler {
  return async (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/healthz' && path !== '/readyz') return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const now = state();
    const ok = path === '/healthz' ? now !== 'FAILED' : now === 'RUNNING';
    const body = ok
      ? { status: path === '/healthz' ? 'ok' : 'ready', worker: now }
      : { error: `${path === '/healthz' ? 'not healthy' : 'not ready'}: worker ${now}`, worker: now };
    res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : JSON.stringify(body));
    return true;
  };
}
