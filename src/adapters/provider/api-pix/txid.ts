import { isUuid } from '../../../domain/ids';

/**
 * The API Pix txid of a payout's charge: the payout id's 32 hex digits. API Pix wants 26-35 letters and
 * digits, and a txid the receiver chooses makes `PUT /cob/{txid}` idempotent: every retry of the
 * payout's charge creation names the same cob, so a PSP never holds two charges for one payout.
 */
export function txidOfPayout(payoutId: string): string {
  if (!isUuid(payoutId)) throw new Error('a payout id is a UUID');
  return payoutId.replace(/-/g, '').toLowerCase();
}

/** The payout a txid was derived from; null for any txid this service did not derive (not ours). */
export function payoutIdOfTxid(txid: string): string | null {
  if (!/^[0-9a-f]{32}$/i.test(txid)) return null;
  const hex = txid.toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
