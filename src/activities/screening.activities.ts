import { ApplicationFailure } from '@temporalio/activity';
import {
  ScreeningUnavailableError,
  type ReceiverScreening,
  type ScreeningVerdict,
} from '../domain/screening';
import type { Logger } from '../observability/logger';

export interface ScreeningActivityDeps {
  screening: ReceiverScreening;
  logger: Logger;
}

/** The receiver's screening right before money moves (docs/decisions.md D45). */
export function createScreeningActivities(deps: ScreeningActivityDeps) {
  const { screening, logger } = deps;
  return {
    /**
     * The verdict of every enabled source. A source that cannot be read fails the attempt (retried:
     * the payout keeps waiting, with an attention item), so an unknown never passes as clear.
     */
    async screenReceiver(a: { payoutId: string; wallet: string }): Promise<ScreeningVerdict> {
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
