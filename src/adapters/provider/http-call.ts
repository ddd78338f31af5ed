import type { z } from 'zod';

import { describeIssues, invalid, parseJson, readText, statusError, transportError } from './http-answers';

/** One call to a provider, as both provider clients report it (the provider API's and API Pix's). */
export interface ProviderCallMetric {
  operation: string;
  durationMs: number;
  outcome: 'ok' | 'error';
  status?: number;
}

export interface HttpProviderOptions {
  /** e.g. http://127.0.0.1:4000 (a path prefix is kept: https://host/provider/v1 works too). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`; never logged nor echoed in errors. */
  apiKey?: string;
  /** Per call, covering connect + response body. Default 10 s. */
  timeoutMs?: number;
  onCall?: (m: ProviderCallMetric) => void;
}

const DEFAULT_TIMEOUT_MS = 10_000;

export interface HttpCallSpec<T extends z.ZodType> {
  operation: string;
  method: 'GET' | 'POST' | 'PATCH';
  path: string;
  body?: unknown;
  schema: T;
  /** Secrets besides the API key that must not reach an error message (a notification token). */
  redact?: string[];
  /** Maps a 404 to a code of its own. */
  notFoundCode?: string;
  /** Machine-readable `code`s of a 409 body that become the error's code (the rest are `conflict`). */
  conflictCodes?: readonly string[];
}

export type HttpCall = <T extends z.ZodType>(spec: HttpCallSpec<T>) => Promise<z.infer<T>>;

/**
 * One call to the provider API, as every operation of the client makes it: the API key, the timeout,
 * no redirects, the answer's status through the shared table of http-answers.ts, its body validated
 * against the operation's schema, and the call reported to `onCall`.
 */
export function createHttpCall(opts: HttpProviderOptions): HttpCall {
  const baseUrl = opts.baseUrl.replace(/\/+$/, '');
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const secrets = opts.apiKey ? [opts.apiKey] : [];

  async function send(spec: HttpCallSpec<z.ZodType>): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    try {
      return await fetch(`${baseUrl}${spec.path}`, {
        method: spec.method,
        headers,
        body: spec.body === undefined ? undefined : JSON.stringify(spec.body),
        // A redirect would send us (and our key) somewhere we did not configure.
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw transportError(spec.operation, err, timeoutMs);
    }
  }

  return async function call<T extends z.ZodType>(spec: HttpCallSpec<T>): Promise<z.infer<T>> {
    const started = performance.now();
    let status: number | undefined;
    try {
      const res = await send(spec);
      status = res.status;
      const text = await readText(res, spec.operation);
      if (!res.ok) throw statusError(spec, res.status, text, [...secrets, ...(spec.redact ?? [])]);
      const parsed = spec.schema.safeParse(parseJson(text, spec.operation));
      if (!parsed.success) throw invalid(spec.operation, describeIssues(parsed.error));
      opts.onCall?.({
        operation: spec.operation,
        durationMs: performance.now() - started,
        outcome: 'ok',
        status,
      });
      return parsed.data;
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
