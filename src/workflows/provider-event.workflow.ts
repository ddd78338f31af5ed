import {
  getExternalWorkflowHandle,
  log,
  proxyActivities,
  proxyLocalActivities,
  sleep,
} from '@temporalio/workflow';
import { isActivityError } from './activity-errors';
import type { PayoutBookkeepingActivities, ProviderActivities } from '../activities';
import { asLocal, BOOKKEEPING, NOTIFICATION_FETCH } from './activity-options';
import type { ProviderEvent } from '../domain/provider-event';
import { providerEventSignal } from './payout.contract';
import type { ProviderEventInput, ProviderEventOutcome } from './provider-event.contract';
import { isUuid } from '../domain/ids';
import { actOnEventAfterTheEnd } from './payout/refunds-and-late-reports';

type Lookups = Pick<ProviderActivities, 'fetchProviderEvent'> &
  Pick<PayoutBookkeepingActivities, 'findPayoutWorkflow'>;

/**
 * The two reads between a webhook and its signal (the event from the provider, the payout's workflow
 * from the read model), as local activities: they run in the worker within the workflow task, so a
 * webhook reaches its payout in one workflow task instead of three. Both are reads; running one again
 * changes nothing.
 */
const read: Lookups = {
  // Named one by one: an activity proxy has no own keys to spread.
  fetchProviderEvent: proxyLocalActivities<Lookups>(asLocal(NOTIFICATION_FETCH)).fetchProviderEvent,
  findPayoutWorkflow: proxyLocalActivities<Lookups>(asLocal(BOOKKEEPING)).findPayoutWorkflow,
};
const bookkeeping = proxyActivities<Pick<PayoutBookkeepingActivities, 'findPayoutWorkflow'>>(BOOKKEEPING);

/**
 * How long an event for a payout id we have no read-model row for is retried before it is given up
 * as not ours. The row is written before the PIX charge is even requested, so in a healthy system it
 * is always there; the wait covers a read that lags (a replica, a restore) without holding a
 * genuinely foreign event forever.
 */
const UNKNOWN_PAYOUT_RETRY_DELAYS = ['5 seconds', '30 seconds', '2 minutes', '5 minutes'] as const;

/**
 * A token the provider answers 404 for on the first fetch is asked again over about 20 minutes before
 * it is dropped: a provider may send the webhook before the event is readable on every one of its
 * replicas (an API Pix institution's `GET /pix/{e2eid}` may lag its callback by minutes), and dropping
 * a real payment's notification would leave it to be found only by reconciliation, if at all.
 */
const UNKNOWN_TOKEN_RETRY_DELAYS = [
  '5 seconds',
  '10 seconds',
  '15 seconds',
  '30 seconds',
  '1 minute',
  '3 minutes',
  '5 minutes',
  '10 minutes',
] as const;

/**
 * One webhook token, started by POST /webhooks/{provider} under an id made of provider and token,
 * so a token is processed once however often it is delivered. The event is fetched back from the
 * provider (the webhook body is never trusted) and handed to its payout workflow as a signal, which
 * applies it at most once (it de-duplicates on the event id as well).
 */
export async function providerEventWorkflow(input: ProviderEventInput): Promise<ProviderEventOutcome> {
  let event: ProviderEvent | null = null;
  for (const delay of [...UNKNOWN_TOKEN_RETRY_DELAYS, undefined]) {
    try {
      event = await read.fetchProviderEvent(input.token);
    } catch (err) {
      if (!isActivityError(err)) throw err;
      log.error('provider event could not be read; it breaks the provider contract', {
        provider: input.provider,
      });
      return 'unreadable_event';
    }
    if (event !== null || delay === undefined) break;
    await sleep(delay);
  }
  if (event === null) {
    log.warn('webhook token unknown to the provider after retries; dropped, nothing changed', {
      provider: input.provider,
    });
    return 'unknown_token';
  }

  const target = await findPayout(read, event.externalId);
  if (target === null) {
    log.warn('provider event names no payout of ours', { eventId: event.eventId, type: event.type });
    return 'unknown_payout';
  }
  try {
    // By workflow id only, never a stored run id: after an operator's `temporal workflow reset` the
    // current run is another one, and it is the one that must get the payment.
    await getExternalWorkflowHandle(target.workflowId).signal(providerEventSignal, event);
    return 'delivered';
  } catch {
    // Signalling a workflow fails only when it has no open run: the payout is COMPLETED or FAILED.
    // The run may have closed after the lookup above, so its final status is read again.
    const ended = (await bookkeeping.findPayoutWorkflow(target.payoutId)) ?? target;
    return actOnEventAfterTheEnd(
      { id: target.payoutId, status: ended.status, blockchainTxId: ended.blockchainTxId },
      event,
    );
  }
}

async function findPayout(read: Lookups, externalId: string) {
  // Provider external ids are our payout ids; anything else cannot be one of ours.
  if (!isUuid(externalId)) return null;
  for (const delay of [...UNKNOWN_PAYOUT_RETRY_DELAYS, undefined]) {
    const found = await read.findPayoutWorkflow(externalId.toLowerCase());
    if (found !== null || delay === undefined) return found;
    await sleep(delay);
  }
  return null;
}
