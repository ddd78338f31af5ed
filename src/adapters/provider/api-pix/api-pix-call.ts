import type { z } from 'zod';

import type { ProviderCallMetric } from '../http-call';
import { describeIssues, invalid, parseJson, statusError, transportError } from '../http-answers';
import { ProviderError } from '../types';
import type { HttpsTransport } from './mtls-transport';
import type { TokenSource } from './oauth-token';

export interface ApiPixCallSpec<T extends z.ZodType> {
  operation: string;
  method: 'GET' | 'PUT' | 'PATCH';
  path: string;
  body?: unknown;
  /** null: the answer's body is not read (a registration answered with an empty 200 or 204). */
  schema: T | null;
  notFoundCode?: string;
}

export type ApiPixCall = <T extends z.ZodType>(spec: ApiPixCallSpec<T>) => Promise<z.infer<T>>;

/**
 * One call to the institution's API Pix, as every part of the API Pix client makes it: an OAuth2 token
 * (a fresh one once on a 401), the answer's status through the shared table of http-answers.ts, and
 * its body validated before anything is used.
 */
export function createApiPixCall(opts: {
  transport: HttpsTransport;
  tokens: TokenSource;
  baseUrl: string;
  onCall?: (m: ProviderCallMetric) => void;
}): ApiPixCall {
  const baseUrl = opts.baseUrl.replace(/\/+$/, '');

  async function send(spec: ApiPixCallSpec<z.ZodType>, token: string) {
    try {
      return await opts.transport({
        method: spec.method,
        url: `${baseUrl}${spec.path}`,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(spec.body !== undefined && { 'content-type': 'application/json' }),
        },
        ...(spec.body !== undefined && { body: JSON.stringify(spec.body) }),
      });
    } catch (err) {
      throw transportError(spec.operation, err, undefined);
    }
  }

  return async function call<T extends z.ZodType>(spec: ApiPixCallSpec<T>): Promise<z.infer<T>> {
    const started = performance.now();
    let status: number | undefined;
    try {
      const token = await opts.tokens.get();
      let answer = await send(spec, token);
      // Tokens never reach an error text, should an institution echo them in an error body.
      const secrets = [token];
      if (answer.status === 401) {
        // Revoked or expired early on the institution's side: one fresh token, one more try.
        opts.tokens.invalidate(token);
        const fresh = await opts.tokens.get();
        secrets.push(fresh);
        answer = await send(spec, fresh);
      }
      status = answer.status;
      if (answer.status === 401) {
        // Refused with a token fetched a moment ago: replicas of this worker may revoke each other's
        // tokens at institutions that keep one per client. Retried, never a verdict on the call.
        throw new ProviderError(
          `provider ${spec.operation}: HTTP 401 with a fresh token`,
          'unauthorized',
          true,
          401,
        );
      }
      if (answer.status < 200 || answer.status >= 300) {
        throw statusError(spec, answer.status, answer.text, secrets);
      }
      const data = spec.schema === null ? undefined : validated(spec.operation, spec.schema, answer.text);
      opts.onCall?.({
        operation: spec.operation,
        durationMs: performance.now() - started,
        outcome: 'ok',
        status,
      });
      return data as z.infer<T>;
    } catch (err) {
      opts.onCall?.({
        operation: spec.operation,
        durationMs: performance.now() - started,
        outcome: 'error',
        status,
      });
      throw err;
    }
  };
}

function validated<T extends z.ZodType>(operation: string, schema: T, text: string): z.infer<T> {
  let body: unknown;
  try {
    body = parseJson(text, operation);
  } catch {
    // A 2xx that is not JSON at all is a gateway's page in front of the institution, not its answer:
    // retried, where a JSON answer that breaks the contract is final.
    throw new ProviderError(
      `provider ${operation}: a 2xx whose body is not JSON`,
      'unreadable_response',
      true,
    );
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw invalid(operation, describeIssues(parsed.error));
  return parsed.data;
}
