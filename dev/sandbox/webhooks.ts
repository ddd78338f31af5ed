import type { FastifyBaseLogger } from 'fastify';

export interface WebhookOptions {
  url: string;
  logger: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  /** First retry delay; doubles on each failure up to maxDelayMs. Default 500 ms. */
  initialDelayMs?: number;
  /** Default 60 s. */
  maxDelayMs?: number;
  /** Give up when the next attempt would start later than this after the first. Default 10 min. */
  maxTotalMs?: number;
  /** Per attempt. Default 5 s. */
  attemptTimeoutMs?: number;
}

export interface WebhookDispatcher {
  /** Starts delivering in the background; never throws. */
  deliver(token: string, meta: { eventId: string; type: string }): void;
  /** Number of deliveries still retrying. */
  pending(): number;
  /** Stops every delivery loop (in-flight requests and sleeps are aborted) and waits for them to end. */
  close(): Promise<void>;
}

/**
 * Delivers `{"token": ...}` to the service as a real provider would: at least once, retrying with
 * exponential backoff until a 2xx, for a bounded time. Deliveries are independent; their order is not
 * guaranteed (a settlement webhook may overtake the payment one while the latter is retrying), which
 * the service has to cope with anyway.
 */
export function createWebhookDispatcher(opts: WebhookOptions): WebhookDispatcher {
  const initialDelayMs = opts.initialDelayMs ?? 500;
  const maxDelayMs = opts.maxDelayMs ?? 60_000;
  const maxTotalMs = opts.maxTotalMs ?? 600_000;
  const attemptTimeoutMs = opts.attemptTimeoutMs ?? 5_000;
  const stop = new AbortController();
  const loops = new Set<Promise<void>>();

  async function run(token: string, meta: { eventId: string; type: string }): Promise<void> {
    // Logs carry the event id and a token prefix only: the token is the key to the event.
    const log = { event_id: meta.eventId, type: meta.type, token_prefix: token.slice(0, 6) };
    const started = Date.now();
    let delay = initialDelayMs;
    for (let attempt = 1; !stop.signal.aborted; attempt += 1) {
      const { ok, ...outcome } = await attemptOnce(token);
      if (ok) {
        opts.logger.info({ ...log, attempt, ...outcome }, 'webhook delivered');
        return;
      }
      if (stop.signal.aborted) break;
      if (Date.now() - started + delay > maxTotalMs) {
        opts.logger.error(
          { ...log, attempt, ...outcome },
          'webhook delivery abandoned: retry window exhausted',
        );
        return;
      }
      opts.logger.warn({ ...log, attempt, ...outcome, retry_in_ms: delay }, 'webhook attempt failed');
      await sleep(delay, stop.signal);
      delay = Math.min(delay * 2, maxDelayMs);
    }
    opts.logger.warn(log, 'webhook delivery stopped: sandbox shutting down');
  }

  async function attemptOnce(token: string): Promise<{ ok: boolean; status?: number; error?: string }> {
    try {
      const res = await fetch(opts.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token }),
        redirect: 'manual',
        signal: AbortSignal.any([stop.signal, AbortSignal.timeout(attemptTimeoutMs)]),
      });
      // Drain the body so the connection can be reused; its content does not matter.
      await res.arrayBuffer().catch(() => undefined);
      return { ok: res.status >= 200 && res.status < 300, status: res.status };
    } catch (err) {
      return { ok: false, error: describeFetchError(err) };
    }
  }

  return {
    deliver(token, meta) {
      if (stop.signal.aborted) {
        opts.logger.warn(
          { event_id: meta.eventId, type: meta.type },
          'webhook not sent: sandbox shutting down',
        );
        return;
      }
      const loop = run(token, meta).catch((err: unknown) => {
        opts.logger.error({ err, event_id: meta.eventId }, 'webhook delivery crashed');
      });
      loops.add(loop);
      void loop.finally(() => loops.delete(loop));
    },
    pending: () => loops.size,
    async close() {
      stop.abort();
      await Promise.all(loops);
    },
  };
}

/** "connect ECONNREFUSED ..." rather than undici's bare "fetch failed". Duck-typed: fetch errors may come from another realm. */
function describeFetchError(err: unknown): string {
  const field = (o: unknown, k: string): unknown =>
    typeof o === 'object' && o !== null ? (o as Record<string, unknown>)[k] : undefined;
  const causeMessage = field(field(err, 'cause'), 'message');
  const message = field(err, 'message');
  if (typeof causeMessage === 'string') return causeMessage;
  return typeof message === 'string' ? message : String(err);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
