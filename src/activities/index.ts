import type { UsdtLedger } from '../adapters/chain/ledger-types';
import type { Db } from '../adapters/db/pool';
import type { PaymentReturns, PixCollection, SettlementProvider } from '../adapters/provider/types';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { createChainActivities, type ChainActivityDeps } from './chain.activities';
import { createPayoutBookkeepingActivities } from './payout-bookkeeping.activities';
import { createProviderActivities } from './provider.activities';
import { createRefundActivities, type RefundPolicy } from './refund.activities';
import { DEFAULT_AUTO_RETURN_KINDS } from '../domain/refund';

export type { ChainActivities } from './chain.activities';
export type { PayoutBookkeepingActivities, RefundKind } from './payout-bookkeeping.activities';
export type { ChargeReconciliation, ProviderActivities, SettlementReport } from './provider.activities';
import { createScreeningActivities } from './screening.activities';
import type { ReceiverScreening } from '../domain/screening';
export type { RequestedBefore, ScreeningActivities } from './screening.activities';
export type { RefundActivities, RefundPolicy } from './refund.activities';
export type { AttentionKind } from '../adapters/db/attention-repo';

export interface ActivityDeps {
  db: Db;
  /** Collects the BRL: whichever PIX provider is configured. */
  provider: PixCollection;
  /** Sends the USDT in provider settlement mode; absent where the PIX provider cannot. */
  settlementProvider?: SettlementProvider | undefined;
  /** Returns received payments to their payers; absent where the PIX provider cannot. */
  returns?: PaymentReturns | undefined;
  /** Which refund kinds return by themselves (REFUND_AUTO_RETURN_KINDS). */
  refundPolicy?: RefundPolicy | undefined;
  ledger: UsdtLedger;
  logger: Logger;
  metrics: Metrics;
  screening: ReceiverScreening;
  nonceConflictProof?: ChainActivityDeps['nonceConflictProof'];
  treasuryRepriceAfterSeconds?: ChainActivityDeps['treasuryRepriceAfterSeconds'];
  paymentHold?: ChainActivityDeps['paymentHold'];
}

/**
 * Every activity of the payout and provider-event workflows, as the worker registers them: thin
 * adapters between the workflows and the outside world, split by concern (payout bookkeeping, the
 * provider, the chain and treasury; partner callbacks live in callback.activities.ts). Each workflow's
 * proxies are typed with only the activities it calls.
 */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createPayoutBookkeepingActivities(deps),
    ...createProviderActivities(deps),
    ...createChainActivities(deps),
    ...createScreeningActivities(deps),
    ...createRefundActivities({
      ...deps,
      policy: deps.refundPolicy ?? { autoReturnKinds: DEFAULT_AUTO_RETURN_KINDS },
    }),
  };
}

export type PayoutActivities = ReturnType<typeof createActivities>;
