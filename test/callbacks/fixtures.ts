import { randomBytes, randomUUID } from 'node:crypto';
import { createPartner, setPartnerCallback } from '../../src/adapters/db/partners-repo';
import type { Db } from '../../src/adapters/db/pool';
import type { PayoutRecord } from '../../src/domain/payout';
import { createSecretBox } from '../../src/adapters/secrets/secret-box';
import { payloadKeysOf } from '../../src/main/wiring';

/** Seals callback secrets as a worker with its own payload key does. */
export const testSecrets = createSecretBox(
  payloadKeysOf({ PAYLOAD_ENCRYPTION_KEY: randomBytes(32).toString('base64') }),
);

/** A partner of its own per test, optionally with a callback URL and secret. */
export async function partnerWithCallback(
  db: Db,
  callback?: { url: string; secret: string },
): Promise<string> {
  const { partner } = await createPartner(db, 'callback test partner');
  if (callback) await setPartnerCallback(db, partner.id, callback, testSecrets);
  return partner.id;
}

/** A payout as the payout workflow holds it when it completes. */
export function completedPayout(partnerId: string): PayoutRecord {
  return {
    id: randomUUID(),
    partnerId,
    status: 'COMPLETED',
    amountCentavos: '10000',
    minAmountUsdtUnits: '17152658',
    settledAmountUsdtUnits: '17825311',
    pixKey: '12345678901',
    pixKeyType: 'CPF',
    receiverWallet: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    pixCopyPaste: '00020101021226...6304ABCD',
    providerChargeId: 'chg_test',
    blockchainTxId: `0x${'ab'.repeat(32)}`,
    paidAt: '2026-01-01T00:00:01.000Z',
    confirmedAt: '2026-01-01T00:00:05.000Z',
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:05.000Z',
    version: 4,
  };
}
