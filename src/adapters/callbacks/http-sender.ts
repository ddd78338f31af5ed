import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { signCallback } from './signature';
import {
  CallbackUrlRefused,
  vetCallbackUrl,
  type CallbackUrlPolicy,
  type ResolvedAddress,
  type Resolver,
  type VettedCallbackUrl,
} from './url-guard';

export interface CallbackSenderOptions extends CallbackUrlPolicy {
  /** Whole attempt: DNS, connect, TLS, request and response headers. */
  timeoutMs: number;
  /** For tests of the guard; production resolves through the system's DNS servers (dns-resolver.ts). */
  resolve?: Resolver;
}

/** Safe defaults for a worker built without explicit settings: https only, public hosts only. */
export const DEFAULT_CALLBACK_SENDER: CallbackSenderOptions = {
  timeoutMs: 10_000,
  requireHttps: true,
  allowPrivateNetworks: false,
};

export interface CallbackRequest {
  url: string;
  secret: string;
  /** A rotation's replaced secret while its overlap lasts: the attempt is signed by both. */
  previousSecret?: string;
  eventId: string;
  /** Sent byte for byte as given: the signature covers exactly these bytes. */
  body: string;
}

export interface CallbackSendResult {
  /** A 2xx answer: the partner has the event. */
  delivered: boolean;
  statusCode?: number;
  /** Why the attempt failed when there was no HTTP answer (refused URL, DNS, connect, TLS, timeout). */
  error?: string;
  /**
   * For the operator's log only: what the URL guard found behind a refusal (addresses, DNS codes,
   * settings), which `error` does not tell the partner (docs/decisions.md D69).
   */
  errorDetail?: string;
  /** The start of the partner's answer, for the operator to see what a failing receiver says. */
  responseExcerpt?: string;
  durationMs: number;
}

const RESPONSE_EXCERPT_BYTES = 512;
const USER_AGENT = 'pix-usdt-payouts-callbacks/1';

/**
 * One signed POST of a callback. Never throws for anything the partner's side causes: a refused
 * URL, an unreachable host, a timeout or a non-2xx answer are outcomes of the attempt, recorded and
 * retried by the delivery workflow. Redirects are not followed (a 3xx is a failed attempt), so the
 * guard's verdict holds for the only host ever contacted.
 */
export async function sendCallback(
  req: CallbackRequest,
  opts: CallbackSenderOptions,
  nowMs: () => number = Date.now,
): Promise<CallbackSendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const signal = AbortSignal.timeout(opts.timeoutMs);
  try {
    const target = await abortable(vetCallbackUrl(req.url, opts, opts.resolve), signal);
    // A fresh timestamp per attempt: receivers reject signatures older than their tolerance window.
    const signature = signCallback(
      req.previousSecret ? [req.secret, req.previousSecret] : req.secret,
      req.eventId,
      Math.floor(nowMs() / 1000),
      req.body,
    );
    const answer = await post(target, req, signature, signal);
    return {
      delivered: answer.statusCode >= 200 && answer.statusCode < 300,
      statusCode: answer.statusCode,
      ...(answer.excerpt ? { responseExcerpt: answer.excerpt } : {}),
      durationMs: elapsed(),
    };
  } catch (err) {
    return {
      delivered: false,
      error: describe(err, signal, opts.timeoutMs),
      ...(err instanceof CallbackUrlRefused && !signal.aborted ? { errorDetail: err.detail } : {}),
      durationMs: elapsed(),
    };
  }
}

function describe(err: unknown, signal: AbortSignal, timeoutMs: number): string {
  if (signal.aborted) return `timed out after ${timeoutMs} ms`;
  if (err instanceof CallbackUrlRefused) return `refused: ${err.message}`;
  const code = (err as { code?: unknown }).code;
  const message = err instanceof Error ? err.message : String(err);
  return (typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message).slice(
    0,
    500,
  );
}

function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  // A resolution in progress is not cancelled (it has its own deadline); the attempt's deadline
  // still holds: the resolution is abandoned.
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Connects only to the vetted addresses: no second DNS answer is ever consulted. */
function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  };
}

function post(
  target: VettedCallbackUrl,
  req: CallbackRequest,
  signature: Record<string, string>,
  signal: AbortSignal,
): Promise<{ statusCode: number; excerpt: string }> {
  const client = target.url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(
      {
        method: 'POST',
        hostname: target.hostname,
        port: target.url.port || undefined,
        path: `${target.url.pathname}${target.url.search}`,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(req.body, 'utf8'),
          'user-agent': USER_AGENT,
          ...signature,
        },
        lookup: pinnedLookup(target.addresses),
        // A pooled socket could outlive the vetting it was opened under.
        agent: false,
        signal,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const finish = () =>
          resolve({
            statusCode: response.statusCode ?? 0,
            excerpt: Buffer.concat(chunks).toString('utf8').slice(0, RESPONSE_EXCERPT_BYTES),
          });
        response.on('data', (chunk: Buffer) => {
          if (size >= RESPONSE_EXCERPT_BYTES) return;
          chunks.push(chunk);
          size += chunk.length;
          // The status is what counts; a large or endless body is not waited for.
          if (size >= RESPONSE_EXCERPT_BYTES) {
            finish();
            response.destroy();
          }
        });
        // Once the status line is in, the answer counts even if its body breaks off or stalls
        // (the deadline destroys it): settling twice is a no-op.
        response.on('end', finish);
        response.on('close', finish);
        response.on('error', finish);
      },
    );
    request.on('error', reject);
    request.end(req.body, 'utf8');
  });
}
