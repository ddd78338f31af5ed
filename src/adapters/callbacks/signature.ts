import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/**
 * Partner callbacks (docs/callbacks.md) are signed by the Standard Webhooks specification (standardwebhooks.com), with
 * its reference library, so a partner verifies them with an off-the-shelf library in any language:
 *
 *   webhook-id:        the event id, the same on every retry of one event (the partner dedups on it)
 *   webhook-timestamp: unix seconds of this attempt
 *   webhook-signature: `v1,<base64 HMAC-SHA256(key, id + "." + timestamp + "." + raw body)>`
 *
 * where the key is the base64 part of the partner's `whsec_<base64>` secret. The id and the
 * timestamp are inside the MAC: a captured request can be replayed neither later nor as another event.
 */
export const WEBHOOK_ID_HEADER = 'webhook-id';
export const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';

export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;
/** Standard Webhooks asks for 24 to 64 random bytes. */
const MIN_SECRET_BYTES = 24;
const MAX_SECRET_BYTES = 64;

/** A new signing secret: `whsec_` and 32 random bytes in base64, as Standard Webhooks libraries expect. */
export function generateCallbackSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/** Why `secret` is not a usable signing secret, or undefined when it is. */
export function callbackSecretProblem(secret: string): string | undefined {
  if (!secret.startsWith(SECRET_PREFIX)) return `must start with ${SECRET_PREFIX}`;
  const body = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body) || body.length % 4 !== 0)
    return `must be ${SECRET_PREFIX} followed by base64`;
  const bytes = Buffer.from(body, 'base64').length;
  if (bytes < MIN_SECRET_BYTES || bytes > MAX_SECRET_BYTES)
    return `must hold ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} random bytes (it has ${bytes})`;
  return undefined;
}

/**
 * The three Standard Webhooks headers of one attempt. With several secrets (a rotation's overlap:
 * the new one first) the signature header carries one signature by each, space-separated, as the
 * specification allows; a receiver that knows either secret accepts the callback.
 */
export function signCallback(
  secrets: string | readonly string[],
  eventId: string,
  timestampSeconds: number,
  rawBody: string,
): Record<string, string> {
  const signature = (typeof secrets === 'string' ? [secrets] : secrets)
    .map((secret) => new Webhook(secret).sign(eventId, new Date(timestampSeconds * 1000), rawBody))
    .join(' ');
  return {
    [WEBHOOK_ID_HEADER]: eventId,
    [WEBHOOK_TIMESTAMP_HEADER]: String(timestampSeconds),
    [WEBHOOK_SIGNATURE_HEADER]: signature,
  };
}
