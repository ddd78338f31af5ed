import { createHmac } from 'node:crypto';

export const EVENT_ID_HEADER = 'X-Payout-Event-Id';
export const SIGNATURE_HEADER = 'X-Payout-Signature';

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + raw body)>` (docs/callbacks.md).
 * The timestamp is inside the MAC so a captured request cannot be replayed later with a fresh `t`;
 * examples/verify-callback-signature.ts is the partner's side of it.
 */
export function signCallback(secret: string, timestampSeconds: number, rawBody: string): string {
  const mac = createHmac('sha256', secret)
    .update(`${timestampSeconds}.`, 'utf8')
    .update(rawBody, 'utf8')
    .digest('hex');
  return `t=${timestampSeconds},v1=${mac}`;
}
