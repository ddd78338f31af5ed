import type { FastifyInstance, FastifyRequest } from 'fastify';
import { API_ERRORS, type HttpError } from './errors';
import { repeatedMemberName } from './json-source';

/** A further check of a body that parsed, on its text and its value; an error refuses the request. */
export type BodyCheck = (text: string, body: unknown) => HttpError | undefined;

/**
 * The JSON body parser of every route: Fastify's own (same limits, same prototype-poisoning
 * refusal, same errors), then a refusal of a repeated member name. JSON.parse keeps the last of
 * `{"amount_brl": 1, "amount_brl": 1000}`, while a proxy, a WAF or the partner's own logging may
 * have read the first: two readers must never disagree on what was asked. `check` adds a route
 * group's own reading of the text (exact-json-body.ts). Registered per encapsulated scope: a scope
 * that replaces the parser replaces it through here.
 */
export function parseJsonBodies(app: FastifyInstance, check?: BodyCheck): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'string' },
    (request: FastifyRequest, text: string | Buffer, done) => {
      parseJson(request, text as string, (err, body) => {
        if (err) return done(err, undefined);
        const repeated = repeatedMemberName(text as string);
        if (repeated !== undefined) return done(API_ERRORS.repeatedJsonMember(repeated), undefined);
        done(check?.(text as string, body) ?? null, body);
      });
    },
  );
}
