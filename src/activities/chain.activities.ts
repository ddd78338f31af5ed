import type { UsdtLedger } from '../adapters/chain/ledger-types';
import type { Db } from '../adapters/db/pool';
import type { ReceiverScreening } from '../domain/screening';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import type { PaymentHoldCheck } from './payment-hold';
import { createTransferProof } from './transfer-proof';
import { createTransferVerificationActivities } from './transfer-verification.activities';
import { createTreasuryBroadcast } from './treasury-broadcast';
import { createTreasuryConfirmActivities } from './treasury-confirm.activities';
import { createTreasurySendActivities } from './treasury-send.activities';

export interface ChainActivityDeps {
  db: Db;
  ledger: UsdtLedger;
  logger: Logger;
  metrics: Metrics;
  /** The receiver screened right before a treasury transfer is signed (docs/decisions.md D45). */
  screening: ReceiverScreening;
  /**
   * How a treasury nonce conflict is proven: this many receipt lookups by hash, this far apart, must
   * all find nothing (a load-balanced RPC may answer from a node that lags). Default 3, 2 s apart.
   */
  nonceConflictProof?: { receiptLookups: number; spacingMs: number };
  /**
   * How long a treasury transaction may wait unmined before it is signed again at the same nonce with
   * higher fees (TREASURY_REPRICE_AFTER_SECONDS). Default 120.
   */
  treasuryRepriceAfterSeconds?: number;
  /**
   * Reads the settling payment again right before a treasury transfer is signed, where the PIX provider
   * reports returns it did not make on our behalf (API Pix devoluções); absent, no such read.
   */
  paymentHold?: PaymentHoldCheck;
}

/**
 * The chain and the treasury: verify a reported USDT transfer (transfer-verification.activities.ts),
 * send and confirm the treasury's own (treasury-send and treasury-confirm.activities.ts). A confirmed
 * transfer is claimed for its payout, so one transfer settles at most one payout (transfer-proof.ts).
 */
export function createChainActivities({
  nonceConflictProof = { receiptLookups: 3, spacingMs: 2_000 },
  treasuryRepriceAfterSeconds = 120,
  ...deps
}: ChainActivityDeps) {
  const proof = createTransferProof(deps);
  const broadcast = createTreasuryBroadcast({ ...deps, nonceConflictProof });
  return {
    ...createTransferVerificationActivities({ ...deps, proof }),
    ...createTreasurySendActivities({ ...deps, broadcast }),
    ...createTreasuryConfirmActivities({ ...deps, treasuryRepriceAfterSeconds, proof, broadcast }),
  };
}

export type ChainActivities = ReturnType<typeof createChainActivities>;
