import type { FastifyError, FastifyInstance } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';

/** An error whose status and message are meant for the client, as `{"error": message}`. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const FRAMEWORK_ERRORS: Record<string, [number, string]> = {
  FST_ERR_CTP_INVALID_JSON_BODY: [400, 'invalid JSON body'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'invalid JSON body'],
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'request body too large (limit 16 KiB)'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'content-type must be application/json'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'invalid content-length'],
};

/**
 * The one place that shapes error bodies: every error leaves as exactly `{"error": string}`, and
 * nothing unexpected (stack, driver message) ever reaches a client.
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof HttpError) {
      return reply.code(error.statusCode).headers(error.headers).send({ error: error.message });
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      const first = error.validation[0];
      return reply.code(400).send({ error: first?.message ?? 'invalid request' });
    }
    if (error instanceof SyntaxError) return reply.code(400).send({ error: 'invalid JSON body' });
    const known = error.code ? FRAMEWORK_ERRORS[error.code] : undefined;
    if (known) return reply.code(known[0]).send({ error: known[1] });
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      return reply.code(error.statusCode).send({ error: 'invalid request' });
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(500).send({ error: 'internal error' });
  });
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'not found' }));
}
