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

/** One attempt's outcome: ok on a 2xx; status or error say what went wrong, for the logs. */
export interface AttemptOutcome {
  ok: boolean;
  status?: number;
  error?: string;
}

export interface RetryLoops {
  /** Runs `attempt` until it is ok or the window is spent; `log` fields go on every line. Never throws. */
  start(attempt: (signal: AbortSignal) => Promise<AttemptOutcome>, log: Record<string, unknown>): void;
  pending(): number;
  close(): Promise<void>;
}

/**
 * At-least-once delivery as a real provider does it: retries with exponential backoff until a 2xx,
 * for a bounded time, every attempt logged. Shared by both faces' webhooks (the token POST here, the
 * API Pix `{"pix": [...]}` push in api-pix/webhooks.ts).
 */
export function createRetryLoops(opts: Omit<WebhookOptions, 'url'>): RetryLoops {
  const initialDelayMs = opts.initialDelayMs ?? 500;
  const maxDelayMs = opts.maxDelayMs ?? 60_000;
  const maxTotalMs = opts.maxTotalMs ?? 600_000;
  const attemptTimeoutMs = opts.attemptTimeoutMs ?? 5_000;
  const stop = new AbortController();
  const loops = new Set<Promise<void>>();

  async function run(
    attempt: (signal: AbortSignal) => Promise<AttemptOutcome>,
    log: Record<string, unknown>,
  ): Promise<void> {
    const started = Date.now();
    let delay = initialDelayMs;
    for (let n = 1; !stop.signal.aborted; n += 1) {
      const { ok, ...outcome } = await attempt(
        AbortSignal.any([stop.signal, AbortSignal.timeout(attemptTimeoutMs)]),
      ).catch((err: unknown): AttemptOutcome => ({ ok: false, error: describeFetchError(err) }));
      if (ok) {
        opts.logger.info({ ...log, attempt: n, ...outcome }, 'webhook delivered');
        return;
      }
      if (stop.signal.aborted) break;
      if (Date.now() - started + delay > maxTotalMs) {
        opts.logger.error(
          { ...log, attempt: n, ...outcome },
          'webhook delivery abandoned: retry window exhausted',
        );
        return;
      }
      opts.logger.warn({ ...log, attempt: n, ...outcome, retry_in_ms: delay }, 'webhook attempt failed');
      await sleep(delay, stop.signal);
      delay = Math.min(delay * 2, maxDelayMs);
    }
    opts.logger.warn(log, 'webhook delivery stopped: sandbox shutting down');
  }

  return {
    start(attempt, log) {
      if (stop.signal.aborted) {
        opts.logger.warn(log, 'webhook not sent: sandbox shutting down');
        return;
      }
      const loop = run(attempt, log).catch((err: unknown) => {
        opts.logger.error({ ...log, err }, 'webhook delivery crashed');
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

/**
 * Delivers `{"token": ...}` to the service as a real provider would (createRetryLoops). Deliveries
 * are independent; their order is not guaranteed (a settlement webhook may overtake the payment one
 * while the latter is retrying), which the service has to cope with anyway.
 */
export function createWebhookDispatcher(opts: WebhookOptions): WebhookDispatcher {
  const loops = createRetryLoops(opts);

  async function attemptOnce(token: string, signal: AbortSignal): Promise<AttemptOutcome> {
    const res = await fetch(opts.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
      redirect: 'manual',
      signal,
    });
    // Drain the body so the connection can be reused; its content does not matter.
    await res.arrayBuffer().catch(() => undefined);
    return { ok: res.status >= 200 && res.status < 300, status: res.status };
  }

  return {
    deliver(token, meta) {
      // Logs carry the event id and a token prefix only: the token is the key to the event.
      loops.start((signal) => attemptOnce(token, signal), {
        event_id: meta.eventId,
        type: meta.type,
        token_prefix: token.slice(0, 6),
      });
    },
    pending: loops.pending,
    close: loops.close,
  };
}

/** "connect ECONNREFUSED ..." rather than undici's bare "fetch failed". Duck-typed: fetch errors may come from another realm. */
export function describeFetchError(err: unknown): string {
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
