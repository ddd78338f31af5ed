import { getExternalWorkflowHandle, log, proxyActivities } from '@temporalio/workflow';
import type { PayoutActivities } from '../activities';
import { providerEventSignal } from './definitions';

// A provider outage must lose nothing: the fetch is retried for as long as it takes.
const fetching = proxyActivities<PayoutActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '5 minutes', nonRetryableErrorTypes: ['ProviderRejected'] },
});

const bookkeeping = proxyActivities<PayoutActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export interface ProviderEventInput {
  provider: string;
  token: string;
}

export type ProviderEventOutcome = 'delivered' | 'unknown_token' | 'unknown_payout' | 'late_payment' | 'ignored';

/**
 * One webhook token, started by POST /webhooks/{provider} under an id made of provider and token,
 * so a token is processed once however often it is delivered. The event is fetched back from the
 * provider (the webhook body is never trusted) and handed to its payout workflow as a signal.
 */
export async function providerEventWorkflow(input: ProviderEventInput): Promise<ProviderEventOutcome> {
  const event = await fetching.fetchProviderEvent(input.token);
  if (event === null) return 'unknown_token';

  const target = await bookkeeping.findPayoutWorkflow(event.externalId);
  if (target === null) {
    log.warn('provider event names no payout of ours', { eventId: event.eventId, type: event.type });
    return 'unknown_payout';
  }
  try {
    await getExternalWorkflowHandle(target.workflowId, target.runId).signal(providerEventSignal, event);
    return 'delivered';
  } catch (err) {
    // Signalling fails only when the payout workflow has ended: the payout is COMPLETED or FAILED.
    if (event.type === 'pix.received') {
      await bookkeeping.recordLatePayment({ payoutId: target.payoutId, event, reason: `payout ${target.status}` });
      return 'late_payment';
    }
    log.warn('event for a finished payout ignored', { eventId: event.eventId, type: event.type, error: String(err) });
    return 'ignored';
  }
}
