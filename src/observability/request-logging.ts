import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { levels } from 'pino';
import { isUuid } from '../domain/ids';

/**
 * Puts the payout id on the api's "request completed" log line, next to the request id Fastify
 * already logs, so one grep joins a partner's request to the worker's logs of the same payout. The
 * id comes from the path (GET) or from the payout in the response (POST), so the routes need not
 * know about it. Below info nothing logs that line, so nothing is built for it (a child logger a
 * request was a few per cent of the api's CPU on a closed GET).
 */
export const payoutLogContext = fp(
  async (app) => {
    app.addHook('onSend', async (request, reply, payload) => {
      if (!logsInfo(reply.log)) return payload;
      const payoutId = payoutIdOf(request, reply, payload);
      if (payoutId) reply.log = reply.log.child({ payoutId });
      return payload;
    });
  },
  { name: 'payout-log-context' },
);

function payoutIdOf(request: FastifyRequest, reply: FastifyReply, payload: unknown): string | undefined {
  if (!request.routeOptions.url?.startsWith('/v1/payouts')) return undefined;
  const fromPath = (request.params as { id?: unknown } | undefined)?.id;
  if (typeof fromPath === 'string' && isUuid(fromPath)) return fromPath.toLowerCase();
  if (reply.statusCode >= 300 || typeof payload !== 'string') return undefined;
  try {
    const id = (JSON.parse(payload) as { id?: unknown }).id;
    return typeof id === 'string' && isUuid(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the logger writes info lines (a level pino does not know is assumed to). */
function logsInfo(logger: FastifyBaseLogger): boolean {
  if (logger.level === 'silent') return false;
  const value = levels.values[logger.level];
  return value === undefined || value <= levels.values.info!;
}
