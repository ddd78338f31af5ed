import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../adapters/db/pool';
import { findPayoutLocation } from '../../adapters/db/payouts-repo';
import { isUuid } from '../../domain/ids';
import { isTerminal } from '../../domain/payout';
import type { ProviderEvent } from '../../domain/provider-event';
import { providerEventSignal } from '../../workflows/payout.contract';

/**
 * The event behind a webhook token, read back from the provider with a short deadline: null when the
 * provider does not know the token (yet). Throws when the provider cannot answer now.
 */
export type ProviderEventReader = (token: string) => Promise<ProviderEvent | null>;

/** How long the api's own signal may take; past it the event goes to its workflow, which signals again. */
const SIGNAL_DEADLINE_MS = 2_000;

/** Why an event went to its provider-event workflow instead of straight to its payout. */
export type DirectDeliveryMiss =
  | 'event_unreadable_now'
  | 'event_unknown_to_provider'
  | 'payout_unknown'
  | 'read_model_unreadable'
  | 'payout_ended'
  | 'signal_not_delivered';

/**
 * The fast path of a provider webhook (docs/decisions.md D77): the api reads the event back from the
 * provider, finds its payout in the read model and signals the payout's workflow itself, which saves
 * the provider-event workflow's start and its workflow task (100-140 ms a webhook on the dev server).
 *
 * It only ever delivers or declines. Everything it declines, and everything whose outcome it cannot
 * tell (a signal that timed out may have landed), goes to the provider-event workflow as before, which
 * retries, waits for a lagging read model and handles events after a payout's end. An event delivered
 * twice (here, then by the workflow; or by two replicas) counts once: the payout de-duplicates on the
 * event id, and a payout that ended meanwhile recognises its own payment and its own settlement.
 */
export async function deliverDirectly(
  deps: { db: Db; temporal: Client; readEvent: ProviderEventReader; log: FastifyBaseLogger },
  token: string,
): Promise<{ payoutId: string } | DirectDeliveryMiss> {
  let event: ProviderEvent | null;
  try {
    event = await deps.readEvent(token);
  } catch (err) {
    // Visible in provider_call_duration_seconds and in the workflow's retries; one line per webhook here.
    deps.log.info({ err: String(err) }, 'provider event not readable now; its workflow will retry');
    return 'event_unreadable_now';
  }
  if (event === null) return 'event_unknown_to_provider';
  // Provider external ids are our payout ids; anything else is for the workflow to log and drop.
  if (!isUuid(event.externalId)) return 'payout_unknown';
  let payout: Awaited<ReturnType<typeof findPayoutLocation>>;
  try {
    payout = await findPayoutLocation(deps.db, event.externalId.toLowerCase());
  } catch (err) {
    deps.log.warn({ err }, 'read model not readable now; the event goes to its workflow');
    return 'read_model_unreadable';
  }
  // A row not there (yet: a lagging replica) is for the workflow, which asks again for minutes.
  if (payout === null) return 'payout_unknown';
  // An ended payout takes no signal; what its event means then is the workflow's rule (a late
  // payment is refunded, a late settlement alerted), kept in one place.
  if (isTerminal(payout.status)) return 'payout_ended';
  try {
    // By workflow id only, as the provider-event workflow signals: the current run gets it. Bounded,
    // so a struggling Temporal costs the webhook one deadline here before its workflow is started.
    const handle = deps.temporal.workflow.getHandle(payout.workflowId);
    await deps.temporal.connection.withDeadline(Date.now() + SIGNAL_DEADLINE_MS, () =>
      handle.signal(providerEventSignal, event),
    );
    return { payoutId: payout.payoutId };
  } catch (err) {
    // Not found: the run closed after the read model was read. Anything else may or may not have
    // landed; the workflow signals again and the payout counts the event once.
    if (!(err instanceof WorkflowNotFoundError)) {
      deps.log.warn({ err, payoutId: payout.payoutId }, 'signal to the payout not confirmed');
    }
    return 'signal_not_delivered';
  }
}
