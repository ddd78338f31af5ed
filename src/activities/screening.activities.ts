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
      let verdict: ScreeningVerdict;
      try {
        verdict = await screening.screen(a.wallet);
      } catch (err) {
        if (err instanceof ScreeningUnavailableError) {
          logger.warn(
            { event: 'screening_unreadable', payoutId: a.payoutId, sources: err.sources },
            err.message,
          );
          throw ApplicationFailure.retryable(err.message, 'ScreeningUnavailable');
        }
        throw err;
      }
      if (verdict.kind === 'flagged') {
        logger.error(
          { event: 'receiver_flagged', payoutId: a.payoutId, source: verdict.source, detail: verdict.detail },
          'receiver flagged by screening before the USDT was sent: not paid until an operator decides',
        );
      }
      return verdict;
    },
  };
}

export type ScreeningActivities = ReturnType<typeof createScreeningActivities>;
