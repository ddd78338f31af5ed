import { defineSearchAttributeKey, type SearchAttributePair } from '@temporalio/common';
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { PayoutRecord } from '../domain/payout';

/**
 * The custom search attributes an operator filters payouts by in the Temporal Web UI, e.g.
 * `PayoutStatus = "PROCESSING" AND PartnerId = "<uuid>"`. They are indexed in clear (a payload
 * codec never sees them), so they hold nothing personal: no PIX key, no wallet, no amount.
 *
 * A cluster must know them before a workflow uses them: the local launcher and the test harness
 * register them, and docs/operations.md "Temporal" lists the `temporal operator search-attribute create`
 * commands for a real cluster.
 */
export const PAYOUT_STATUS = defineSearchAttributeKey('PayoutStatus', 'KEYWORD');
export const PARTNER_ID = defineSearchAttributeKey('PartnerId', 'KEYWORD');

/** Every custom search attribute the service uses, for registration. */
export const PAYOUT_SEARCH_ATTRIBUTES = [PAYOUT_STATUS, PARTNER_ID] as const;

/** Set at workflow start, so a payout is findable before a worker has picked it up. */
export function payoutSearchAttributes(
  payout: Pick<PayoutRecord, 'status' | 'partnerId'>,
): SearchAttributePair[] {
  return [
    { key: PAYOUT_STATUS, value: payout.status },
    { key: PARTNER_ID, value: payout.partnerId },
  ];
}

/**
 * Called from the payout workflow on every save. Only a change is upserted: each upsert is an
 * event in the workflow history, and most saves (e.g. the PIX charge arriving) keep the status.
 */
export function upsertPayoutSearchAttributes(payout: Pick<PayoutRecord, 'status' | 'partnerId'>): void {
  const current = workflowInfo().typedSearchAttributes;
  const changed = payoutSearchAttributes(payout).filter((pair) => current.get(pair.key) !== pair.value);
  if (changed.length > 0) upsertSearchAttributes(changed);
}
