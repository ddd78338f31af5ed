import type { Client } from '@temporalio/client';
import type { FastifyPluginAsync } from 'fastify';
import { isDatabaseReachable, type Db } from '../../adapters/db/pool';

const CHECK_DEADLINE_MS = 2_000;

async function isTemporalReachable(temporal: Client): Promise<boolean> {
  try {
    await temporal.withDeadline(Date.now() + CHECK_DEADLINE_MS, () =>
      temporal.workflowService.getSystemInfo({}),
    );
    return true;
  } catch {
    return false;
  }
}

/** /healthz: the process is up. /readyz: its dependencies answer; 503 names what is down. */
export const healthRoutes: FastifyPluginAsync<{ db: Db; temporal: Client }> = async (app, opts) => {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const [database, temporal] = await Promise.all([
      isDatabaseReachable(opts.db),
      isTemporalReachable(opts.temporal),
    ]);
    const down = [!database && 'postgresql', !temporal && 'temporal'].filter(Boolean);
    if (down.length > 0) return reply.code(503).send({ error: `not ready: ${down.join(', ')} unreachable` });
    return { status: 'ready' };
  });
};
