/**
 * Verifying a PIX -> USDT payout callback: copy this file into your receiver.
 *
 * Callbacks follow the Standard Webhooks specification (https://www.standardwebhooks.com), so any
 * of its libraries verifies them (npm `standardwebhooks`, used here; PyPI `standardwebhooks`, Go,
 * Java, Ruby, PHP, Rust, C# ...). Every callback is a POST with a JSON body
 * `{"event": "payout.completed" | "payout.failed", "payout": {...}}` and three headers:
 *
 *   webhook-id:        evt_<payout id>_completed   (the same on every retry of one event)
 *   webhook-timestamp: unix seconds of this attempt
 *   webhook-signature: v1,<base64 HMAC-SHA256>     (several, space-separated, during a secret rotation)
 *
 * Verify over the raw bytes of the body exactly as received (before any JSON parsing), answer 2xx
 * once you have stored the event, and de-duplicate on webhook-id: delivery is at least once,
 * retried with backoff for 24 hours until you answer 2xx. The library also refuses a timestamp more
 * than 5 minutes from your clock, so a captured request cannot be replayed later.
 *
 *   npm install standardwebhooks
 */
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

export interface PayoutCallback {
  event: 'payout.completed' | 'payout.failed';
  payout: { id: string; status: string; [field: string]: unknown };
}

export type VerifyResult =
  { valid: true; eventId: string; callback: PayoutCallback } | { valid: false; reason: string };

export interface VerifyOptions {
  /** The request body exactly as received: a Buffer, or the string it decodes to in UTF-8. */
  rawBody: Buffer | string;
  /** The request headers (Node's IncomingHttpHeaders, or any name -> value map, lower-case names). */
  headers: Record<string, string | string[] | undefined>;
  /** Your callback secret (whsec_...), from the operator. */
  secret: string;
}

const HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

export function verifyCallback(opts: VerifyOptions): VerifyResult {
  const headers: Record<string, string> = {};
  for (const name of HEADERS) {
    const value = opts.headers[name];
    const first = Array.isArray(value) ? value[0] : value;
    if (!first) return { valid: false, reason: `missing ${name} header` };
    headers[name] = first;
  }
  const payload = typeof opts.rawBody === 'string' ? opts.rawBody : opts.rawBody.toString('utf8');
  try {
    const callback = new Webhook(opts.secret).verify(payload, headers) as PayoutCallback;
    return { valid: true, eventId: headers['webhook-id']!, callback };
  } catch (err) {
    if (err instanceof WebhookVerificationError) return { valid: false, reason: err.message };
    throw err;
  }
}

/*
 * Example receiver (Node.js http, no framework). With a framework, make sure you get the raw body:
 * e.g. in Fastify, register a content-type parser for application/json with `parseAs: 'buffer'`;
 * in Express, use `express.raw({ type: 'application/json' })` on this route.
 *
 *   import http from 'node:http';
 *   import { verifyCallback } from './verify-callback-signature';
 *
 *   http.createServer((req, res) => {
 *     const chunks: Buffer[] = [];
 *     req.on('data', (c: Buffer) => chunks.push(c));
 *     req.on('end', () => {
 *       const check = verifyCallback({
 *         rawBody: Buffer.concat(chunks),
 *         headers: req.headers,
 *         secret: process.env.PAYOUT_CALLBACK_SECRET!,
 *       });
 *       if (!check.valid) {
 *         res.writeHead(401).end();
 *         return;
 *       }
 *       // Store (check.eventId, check.callback) once, ignoring an eventId you already have, then:
 *       res.writeHead(204).end();
 *     });
 *   }).listen(8080);
 */
