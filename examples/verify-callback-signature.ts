/**
 * Verifying a PIX -> USDT payout callback: copy this file into your receiver.
 *
 * Every callback is a POST with a JSON body and two headers:
 *
 *   X-Payout-Event-Id:  evt_<payout id>_completed   (the same on every retry of one event)
 *   X-Payout-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + raw body)>
 *
 * Verify the signature over the raw bytes of the body exactly as received (before any JSON
 * parsing), answer 2xx once you have stored the event, and de-duplicate on X-Payout-Event-Id:
 * delivery is at least once, retried with backoff for 24 hours until you answer 2xx.
 *
 * Node.js only (node:crypto), no dependencies.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export type VerifyResult =
  | { valid: true; timestamp: number }
  | {
      valid: false;
      reason:
        'missing_signature' | 'malformed_signature' | 'timestamp_out_of_tolerance' | 'signature_mismatch';
    };

export interface VerifyOptions {
  /** The request body exactly as received: a Buffer, or the string it decodes to in UTF-8. */
  rawBody: Buffer | string;
  /** The value of the X-Payout-Signature header. */
  signatureHeader: string | string[] | undefined;
  /** Your callback secret (whsec_...), from the operator. */
  secret: string;
  /**
   * How far the signature's timestamp may be from your clock, in seconds (default 300). Each
   * retry is signed afresh, so a small window loses nothing; it stops a captured request from
   * being replayed later.
   */
  toleranceSeconds?: number;
  /** Your clock in unix seconds; defaults to now. */
  nowSeconds?: number;
}

export function verifyCallbackSignature(opts: VerifyOptions): VerifyResult {
  const header = Array.isArray(opts.signatureHeader) ? opts.signatureHeader[0] : opts.signatureHeader;
  if (!header) return { valid: false, reason: 'missing_signature' };

  let timestamp: number | undefined;
  const candidates: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    // Several v1 entries may appear (e.g. while a secret is rotated); any one matching is enough.
    else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(value)) candidates.push(value.toLowerCase());
  }
  if (timestamp === undefined || candidates.length === 0)
    return { valid: false, reason: 'malformed_signature' };

  const now = opts.nowSeconds ?? Math.floor(Date.now() / 1000);
  const tolerance = opts.toleranceSeconds ?? 300;
  if (Math.abs(now - timestamp) > tolerance) return { valid: false, reason: 'timestamp_out_of_tolerance' };

  const expected = createHmac('sha256', opts.secret)
    .update(`${timestamp}.`, 'utf8')
    .update(typeof opts.rawBody === 'string' ? Buffer.from(opts.rawBody, 'utf8') : opts.rawBody)
    .digest();
  // Constant-time comparison: timing must not reveal how many leading bytes of a forgery are right.
  const matches = candidates.some((hex) => timingSafeEqual(Buffer.from(hex, 'hex'), expected));
  return matches ? { valid: true, timestamp } : { valid: false, reason: 'signature_mismatch' };
}

/*
 * Example receiver (Node.js http, no framework). With a framework, make sure you get the raw body:
 * e.g. in Fastify, register a content-type parser for application/json with `parseAs: 'buffer'`;
 * in Express, use `express.raw({ type: 'application/json' })` on this route.
 *
 *   import http from 'node:http';
 *   import { verifyCallbackSignature } from './verify-callback-signature';
 *
 *   http.createServer((req, res) => {
 *     const chunks: Buffer[] = [];
 *     req.on('data', (c: Buffer) => chunks.push(c));
 *     req.on('end', () => {
 *       const rawBody = Buffer.concat(chunks);
 *       const check = verifyCallbackSignature({
 *         rawBody,
 *         signatureHeader: req.headers['x-payout-signature'],
 *         secret: process.env.PAYOUT_CALLBACK_SECRET!,
 *       });
 *       if (!check.valid) {
 *         res.writeHead(401).end();
 *         return;
 *       }
 *       const eventId = String(req.headers['x-payout-event-id']);
 *       const { event, payout } = JSON.parse(rawBody.toString('utf8'));
 *       // Store (eventId, event, payout) once, ignoring an eventId you already have, then:
 *       res.writeHead(204).end();
 *     });
 *   }).listen(8080);
 */
