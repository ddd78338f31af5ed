import { ApplicationFailure } from '@temporalio/activity';
import {
  ScreeningUnavailableError,
  type ReceiverScreening,
  type ScreeningVerdict,
} from '../domain/screening';
import type { Db } from '../adapters/db/pool';
import { findSettlementRequestSent } from '../adapters/db/settlement-requests-repo';
import type { Logger } from '../observability/logger';

export interface ScreeningActivityDeps {
  screening: ReceiverScreening;
  logger: Logger;
}

/** A settlement request for the payout is on record already: the provider may be settling it. */
export interface RequestedBefore {
  kind: 'requested_before';
  /** The provider's id for it, when an answer gave it. */
  settlementId?: string;
}

/** The receiver's screening right before money moves (docs/decisions.md D45). */
export function createScreeningActivities(deps: ScreeningActivityDeps & { db: Db }) {
  const { screening, logger, db } = deps;
  return {
    /**
     * The verdict of every enabled source. A source that cannot be read fails the attempt (retried:
     * the payout keeps waiting, with an attention item), so an unknown never passes as clear.
     * `unlessRequested`: a provider-mode payout about to settle first asks whether a settlement
     * request of it is on record (sent by a run an operator's reset undid): then the provider may be
     * settling, nothing is decided on the screening, and the payout follows that settlement.
     */
    async screenReceiver(a: {
      payoutId: string;
      wallet: string;
      unlessRequested?: boolean;
    }): Promise<ScreeningVerdict | RequestedBefore> {
      if (a.unlessRequested) {
        const sent = await findSettlementRequestSent(db, a.payoutId);
        if (sent !== null) {
          logger.warn(
            { event: 'settlement_requested_before', payoutId: a.payoutId, settlementId: sent.settlementId },
            'a settlement request of this payout is on record from an earlier run: the payout follows it',
          );
          return {
            kind: 'requested_before',
            ...(sent.settlementId !== null && { settlementId: sent.settlementId }),
          };
        }
      }
      return screenBeforeMoneyMoves({ screening, logger }, a.payoutId, a.wallet, 'before the USDT was sent');
    },
  };
}

/**
 * The receiver screened right before money moves, by any step that moves it (the screening activity,
 * each settlement request attempt, each treasury signature): a flag is logged as an error and
 * answered, a source that cannot be read fails the attempt retryably (`ScreeningUnavailable`), never
 * taken as clear.
 */
export async function screenBeforeMoneyMoves(
  { screening, logger }: ScreeningActivityDeps,
  payoutId: string,
  wallet: string,
  /** When, for the flag's log line: "before the USDT was sent", "right before ... was signed". */
  moment: string,
): Promise<ScreeningVerdict> {
  let verdict: ScreeningVerdict;
  try {
    verdict = await screening.screen(wallet);
  } catch (err) {
    if (!(err instanceof ScreeningUnavailableError)) throw err;
    logger.warn({ event: 'screening_unreadable', payoutId, sources: err.sources }, err.message);
    throw ApplicationFailure.retryable(err.message, 'ScreeningUnavailable');
  }
  if (verdict.kind === 'flagged') {
    logger.error(
      { event: 'receiver_flagged', payoutId, source: verdict.source, detail: verdict.detail },
      `receiver flagged by screening ${moment}: not paid until an operator decides`,
    );
  }
  return verdict;
}

export type ScreeningActivities = ReturnType<typeof createScreeningActivities>;
