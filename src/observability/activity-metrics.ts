import type { Context as ActivityContext } from '@temporalio/activity';
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
  Next,
} from '@temporalio/worker';
import { isTerminal, type PayoutRecord } from '../domain/payout';
import type { Metrics } from './metrics';

/**
 * The business metrics a payments team watches, taken from the activities' own inputs and results
 * as they succeed, so the activities stay free of metrics code:
 * - recordPayout with a terminal payout: payouts_terminal_total{status, failure_reason} and
 *   payout_duration_seconds{outcome}, from the payout's own creation and terminal timestamps
 *   (workflow time, so a late or retried activity does not stretch the duration);
 * - sendPartnerCallback / givePartnerCallbackUp: partner_callback_deliveries_total{outcome}.
 * A terminal payout is saved once; only an attempt whose write succeeded but whose completion was
 * lost (worker killed in between) is retried and counted twice.
 */
export function activityMetricsInterceptor(metrics: Metrics): ActivityInterceptorsFactory {
  return (ctx: ActivityContext) => ({
    inbound: {
      async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) {
        const result: unknown = await next(input);
        const activity = ctx.info.activityType;
        if (activity === 'recordPayout') observeRecordedPayout(metrics, input.args[0] as PayoutRecord);
        else if (activity === 'sendPartnerCallback') {
          metrics.callbackDeliveries.inc({ outcome: (result as { kind: string }).kind });
        } else if (activity === 'givePartnerCallbackUp')
          metrics.callbackDeliveries.inc({ outcome: 'gave_up' });
        return result;
      },
    },
  });
}

export function observeRecordedPayout(metrics: Metrics, payout: PayoutRecord): void {
  if (!isTerminal(payout.status)) return;
  metrics.payoutsTerminal.inc({ status: payout.status, failure_reason: payout.failureReason ?? 'none' });
  const seconds = (Date.parse(payout.updatedAt) - Date.parse(payout.createdAt)) / 1000;
  if (Number.isFinite(seconds) && seconds >= 0) {
    metrics.payoutDuration.observe(
      { outcome: payout.status === 'COMPLETED' ? 'completed' : 'failed' },
      seconds,
    );
  }
}
