import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

// Orchestrators and the local launcher probe /healthz and /readyz every few seconds; at info level
// those two lines per probe drowned the requests that matter. They stay available at debug.
const PROBES = new Set(['/healthz', '/readyz']);
const isProbe = (request: FastifyRequest) => PROBES.has(request.url.split('?')[0]!);

export class ProbesAtDebug extends LogController {
  override incomingRequest(request: FastifyRequest, reply: FastifyReply): void {
    if (!isProbe(request)) return super.incomingRequest(request, reply);
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (error || !isProbe(request)) return super.requestCompleted(error, request, reply);
    reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}
