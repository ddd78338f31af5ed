import { defineSearchAttributeKey, type SearchAttributePair } from '@temporalio/common';
import { setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { PayoutRecord } from '../domain/payout';

/**
 * The custom search attributes an operator filters payouts by in the Temporal Web UI, e.g.
 * `PayoutId = "<uuid>"` (the id a partner quotes, whatever the workflow id: idempotent payouts have
 * ids made of partner and key), `PayoutStatus = "FAILED" AND PartnerId = "<uuid>"`, or
 * `PayoutFailureReason = "charge_expired"`. They are indexed in clear (a payload codec never sees
 * them), so they hold nothing personal: no PIX key, no wallet, no amount.
 *
 * A cluster must know them before a workflow uses them: the local launcher and the test harness
 * register them, and docs/operations.md "Temporal" lists the `temporal operator search-attribute create`
 * commands for a real cluster (the worker refuses to start while one is missing).
 */
export const PAYOUT_ID = defineSearchAttributeKey('PayoutId', 'KEYWORD');
export const PAYOUT_STATUS = defineSearchAttributeKey('PayoutStatus', 'KEYWORD');
export const PARTNER_ID = defineSearchAttributeKey('PartnerId', 'KEYWORD');
export const PAYOUT_FAILURE_REASON = defineSearchAttributeKey('PayoutFailureReason', 'KEYWORD');

/** Every custom search attribute the service uses, for registration. */
export const PAYOUT_SEARCH_ATTRIBUTES = [
  PAYOUT_ID,
  PAYOUT_STATUS,
  PARTNER_ID,
  PAYOUT_FAILURE_REASON,
] as const;

type Visible = Pick<PayoutRecord, 'id' | 'status' | 'partnerId' | 'failureReason'>;

/** Set at workflow start, so a payout is findable (by its id too) before a worker has picked it up. */
export function payoutSearchAttributes(payout: Visible): SearchAttributePair[] {
  const pairs: SearchAttributePair[] = [
    { key: PAYOUT_ID, value: payout.id },
    { key: PAYOUT_STATUS, value: payout.status },
    { key: PARTNER_ID, value: payout.partnerId },
  ];
  if (payout.failureReason !== undefined)
    pairs.push({ key: PAYOUT_FAILURE_REASON, value: payout.failureReason });
  return pairs;
}

/** Workflow ids are not payout ids: the one-line summary an operator sees at the top of a workflow. */
export function payoutSummary(p: { id: string; amountBrl: string; wallet: string }): string {
  return `Payout ${p.id}: R$ ${p.amountBrl} to ${p.wallet}`;
}

/**
 * The workflow's "current details" in the Web UI: the payout's state in words, so a FAILED payout
 * reads as failed (and why) without opening its result. The workflow execution itself completes
 * normally whatever the outcome: FAILED is a business result, not a workflow failure.
 */
export function payoutDetails(payout: Visible): string {
  if (payout.status === 'FAILED') return `**PAYOUT FAILED**: ${payout.failureReason ?? 'unknown reason'}`;
  if (payout.status === 'COMPLETED') return '**Payout completed**: USDT delivered';
  return `Payout ${payout.status.toLowerCase()}`;
}

/**
 * Called from the payout workflow on every save. An upsert is an event in the workflow history, so
 * one is made only when the status (or partner) changes, exactly as before PayoutId and
 * PayoutFailureReason existed: the extra keys ride along in that same upsert, which keeps histories
 * recorded by earlier code replaying (test/replay). The details are not history events at all.
 */
export function upsertPayoutSearchAttributes(payout: Visible): void {
  setCurrentDetails(payoutDetails(payout));
  const current = workflowInfo().typedSearchAttributes;
  const pairs = payoutSearchAttributes(payout);
  const decisive = pairs.filter((pair) => pair.key === PAYOUT_STATUS || pair.key === PARTNER_ID);
  if (!decisive.some((pair) => current.get(pair.key) !== pair.value)) return;
  const changed = pairs.filter((pair) => current.get(pair.key) !== pair.value);
  upsertSearchAttributes(changed);
}
