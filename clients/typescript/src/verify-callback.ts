import { Webhook } from 'standardwebhooks';
import type { components } from './schema';

export type Payout = components['schemas']['Payout'];

/** What the service POSTs to your callback URL (docs/callbacks.md). Ignore events you do not know. */
export type CallbackEvent =
  | { event: 'payout.completed' | 'payout.failed'; payout: Payout }
  | { event: 'callback.test'; created_at: string };

/** The callback is not ours, was altered, or is too old to accept (a replay). */
export class CallbackVerificationError extends Error {
  override name = 'CallbackVerificationError';
}

/**
 * Checks a callback's Standard Webhooks signature (webhook-id, webhook-timestamp, webhook-signature)
 * with your secret (whsec_...) over the raw body exactly as received, and returns the event. The
 * timestamp must be within 5 minutes of your clock. De-duplicate on `id`: delivery is at least once.
 */
export function verifyCallback(
  rawBody: string | Uint8Array,
  headers: Record<string, string | string[] | undefined> | Headers,
  secret: string,
): { id: string; event: CallbackEvent } {
  const header = (name: string): string => {
    const value =
      headers instanceof Headers ? headers.get(name) : (headers[name] ?? headers[name.toLowerCase()]);
    const first = Array.isArray(value) ? value[0] : value;
    if (!first) throw new CallbackVerificationError(`missing ${name} header`);
    return first;
  };
  const signed = {
    'webhook-id': header('webhook-id'),
    'webhook-timestamp': header('webhook-timestamp'),
    'webhook-signature': header('webhook-signature'),
  };
  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  try {
    const event = new Webhook(secret).verify(body, signed) as CallbackEvent;
    return { id: signed['webhook-id'], event };
  } catch (err) {
    throw new CallbackVerificationError(err instanceof Error ? err.message : String(err));
  }
}
