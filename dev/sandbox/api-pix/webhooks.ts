import http from 'node:http';
import https from 'node:https';
import { rootCertificates } from 'node:tls';

import type { FastifyBaseLogger } from 'fastify';

import { createRetryLoops, type AttemptOutcome, type WebhookOptions } from '../webhooks';

export interface PixPushOptions extends Partial<Omit<WebhookOptions, 'url' | 'logger'>> {
  logger: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  /** Presented when the webhook URL is https (institutions push over mutual TLS). */
  clientCert: string;
  clientKey: string;
  /** Trusted besides the public roots, so a receiver using the sandbox's own CA works too. */
  ca: string;
  /** Pix to the same URL within this window go out in one body. Default 200 ms. */
  batchMs?: number;
}

export interface PixPusher {
  /** Queues `pix` (as GET /pix/{e2eid} serves it) for `webhookUrl` + "/pix". Never throws. */
  push(webhookUrl: string, pix: { endToEndId: string }): void;
  pending(): number;
  close(): Promise<void>;
}

/**
 * The API Pix callback: POST `{"pix": [...]}` to the registered webhookUrl with `/pix` appended, as
 * institutions do, several Pix received close together in one body, retried like the plain face's
 * webhooks until a 2xx.
 */
export function createPixPusher(opts: PixPushOptions): PixPusher {
  const loops = createRetryLoops(opts);
  const batchMs = opts.batchMs ?? 200;
  const batches = new Map<string, { items: { endToEndId: string }[]; timer: NodeJS.Timeout }>();
  let closed = false;

  function flush(target: string): void {
    const batch = batches.get(target);
    batches.delete(target);
    if (!batch) return;
    const body = JSON.stringify({ pix: batch.items });
    loops.start((signal) => post(new URL(target), body, signal), {
      url: target,
      end_to_end_ids: batch.items.map((p) => p.endToEndId),
    });
  }

  function post(url: URL, body: string, signal: AbortSignal): Promise<AttemptOutcome> {
    const tls = url.protocol === 'https:';
    return new Promise((resolve, reject) => {
      const request = (tls ? https : http).request(
        url,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          signal,
          ...(tls && { cert: opts.clientCert, key: opts.clientKey, ca: [...rootCertificates, opts.ca] }),
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            resolve({ ok: status >= 200 && status < 300, status });
          });
          res.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end(body);
    });
  }

  return {
    push(webhookUrl, pix) {
      if (closed) {
        opts.logger.warn({ end_to_end_id: pix.endToEndId }, 'pix webhook not sent: sandbox shutting down');
        return;
      }
      const target = `${webhookUrl.replace(/\/+$/, '')}/pix`;
      const batch = batches.get(target);
      if (batch) batch.items.push(pix);
      else batches.set(target, { items: [pix], timer: setTimeout(() => flush(target), batchMs) });
    },
    pending: () => batches.size + loops.pending(),
    async close() {
      closed = true;
      for (const [target, batch] of batches) {
        clearTimeout(batch.timer);
        opts.logger.warn(
          { url: target, count: batch.items.length },
          'pix webhook not sent: sandbox shutting down',
        );
      }
      batches.clear();
      await loops.close();
    },
  };
}
