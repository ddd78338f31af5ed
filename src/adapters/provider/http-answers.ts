import type { z } from 'zod';

import { ProviderError } from './types';

/**
 * How every provider client reads an HTTP answer and turns a failure into a ProviderError: one table
 * of what is retryable (classifyStatus), one way to keep secrets out of error texts. Shared by the
 * provider API's client and the API Pix client, so both providers fail the same way for the same answer.
 */

/** Enough of a provider error body to diagnose, bounded so a huge page cannot flood the logs. */
const MAX_ERROR_TEXT = 200;

export async function readText(res: Response, operation: string): Promise<string> {
  try {
    return await res.text();
  } catch (err) {
    // The timeout signal also covers the body: a provider that stalls mid-body is a timeout.
    throw transportError(operation, err, undefined);
  }
}

export function parseJson(text: string, operation: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalid(operation, 'body is not JSON');
  }
}

export function invalid(operation: string, detail: string): ProviderError {
  return new ProviderError(
    `provider ${operation}: malformed response (${detail})`,
    'invalid_response',
    false,
  );
}

export function describeIssues(error: z.ZodError): string {
  // Paths and messages only: received values could be anything, including secrets.
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`)
    .join('; ');
}

export function transportError(
  operation: string,
  err: unknown,
  timeoutMs: number | undefined,
): ProviderError {
  // Duck-typed on purpose: fetch's errors come from Node's internals and may belong to another realm
  // (a vm context, jest), where `instanceof Error` is false.
  const { name, message, cause } = errorFields(err);
  if (name === 'TimeoutError' || name === 'AbortError') {
    const after = timeoutMs === undefined ? '' : ` after ${timeoutMs} ms`;
    return new ProviderError(`provider ${operation}: timed out${after}`, 'timeout', true);
  }
  // undici reports "fetch failed" and puts the socket error (ECONNREFUSED ...) in `cause`; its code
  // says enough and, unlike a URL, never carries the notification token.
  const causeCode = errorFields(cause).code;
  const reason = causeCode ?? message ?? 'unknown error';
  return new ProviderError(`provider ${operation}: network error (${reason})`, 'network_error', true);
}

function errorFields(err: unknown): { name?: string; message?: string; code?: string; cause?: unknown } {
  if (typeof err !== 'object' || err === null) return {};
  const e = err as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return { name: text(e.name), message: text(e.message), code: text(e.code), cause: e.cause };
}

export function statusError(
  spec: { operation: string; notFoundCode?: string; conflictCodes?: readonly string[] },
  status: number,
  bodyText: string,
  secrets: string[],
): ProviderError {
  let [code, retryable] = classifyStatus(status, spec.notFoundCode);
  const bodyCode = status === 409 ? errorBodyField(bodyText, 'code') : undefined;
  if (bodyCode !== undefined && spec.conflictCodes?.includes(bodyCode)) [code, retryable] = [bodyCode, false];
  const detail = errorText(bodyText, secrets);
  const message = `provider ${spec.operation}: HTTP ${status}${detail ? ` (${detail})` : ''}`;
  return new ProviderError(message, code, retryable, status);
}

/** The retry policy of the whole service towards the provider lives in this one table. */
export function classifyStatus(
  status: number,
  notFoundCode = 'not_found',
): [code: string, retryable: boolean] {
  if (status >= 500) return ['server_error', true];
  if (status === 408) return ['timeout', true];
  if (status === 429) return ['rate_limited', true];
  if (status === 401 || status === 403) return ['unauthorized', false];
  if (status === 404) return [notFoundCode, false];
  if (status === 409) return ['conflict', false];
  if (status >= 400) return ['bad_request', false];
  return ['unexpected_status', false];
}

/** A string field of a JSON error body; undefined for any other body (a proxy's HTML page, say). */
function errorBodyField(bodyText: string, field: 'error' | 'code' | 'detail' | 'title'): string | undefined {
  try {
    const parsed = JSON.parse(bodyText) as unknown;
    if (parsed && typeof parsed === 'object' && field in parsed) {
      const value = (parsed as Record<string, unknown>)[field];
      if (typeof value === 'string') return value;
    }
  } catch {
    // Not JSON.
  }
  return undefined;
}

export function errorText(bodyText: string, secrets: string[]): string {
  // `error` is the provider API's field, `detail` and `title` are RFC 7807's (API Pix answers
  // problem+json). Not JSON (a proxy's HTML page, say): keep the raw text, truncated below.
  let text =
    errorBodyField(bodyText, 'error') ??
    errorBodyField(bodyText, 'detail') ??
    errorBodyField(bodyText, 'title') ??
    bodyText;
  // Redact before truncating, so a secret cut in half cannot slip through.
  text = redact(text, secrets);
  // eslint-disable-next-line no-control-regex
  text = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return text.length > MAX_ERROR_TEXT ? `${text.slice(0, MAX_ERROR_TEXT)}...` : text;
}

export function redact(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) if (s.length > 0) out = out.split(s).join('[redacted]');
  return out;
}
