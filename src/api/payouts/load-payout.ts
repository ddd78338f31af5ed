import type { FastifyRequest } from 'fastify';
import type { Client } from '@temporalio/client';
import { findPartnerPayout, type StoredPayout } from '../../adapters/db/payouts-repo';
import type { Db } from '../../adapters/db/pool';
import { isTerminal, type PayoutRecord } from '../../domain/payout';
import { getPayoutQuery } from '../../workflows/payout.contract';
import { isUuid } from '../../domain/ids';

const QUERY_DEADLINE_MS = 2_000;

/**
 * A partner's payout, or null for an unknown id, a malformed id or another partner's payout (one
 * answer for all three: no existence leak).
 *
 * A COMPLETED or FAILED payout never changes again, and the workflow writes that final state to the
 * read model before it closes: the read model answers it alone. Querying a closed workflow would
 * make a worker fetch and replay its whole history for the same answer.
 *
 * A live payout is answered by its workflow (the read model may lag a transition by the time its
 * write takes); when the workflow is gone (past retention) or slow, the read model answers instead.
 *
 * `prefetched`: the read model's row as the API key's lookup already read it for this request
 * (auth.ts `reads`, docs/decisions.md D78), null when there was none; undefined reads it here.
 */
export async function loadPartnerPayout(
  deps: { db: Db; temporal: Client },
  partnerId: string,
  payoutId: string,
  prefetched?: StoredPayout | null,
): Promise<PayoutRecord | null> {
  if (!isUuid(payoutId)) return null;
  const stored =
    prefetched !== undefined
      ? prefetched
      : await findPartnerPayout(deps.db, partnerId, payoutId.toLowerCase());
  if (!stored) return null;
  const { workflowId, runId: _storedRun, ...readModel } = stored;
  if (isTerminal(readModel.status)) return readModel;
  try {
    // By workflow id only: after an operator's reset the current run is another one, and its state
    // is the payout's (its versions restart from the reset point, so they are not compared).
    return await deps.temporal.withDeadline(Date.now() + QUERY_DEADLINE_MS, () =>
      deps.temporal.workflow.getHandle(workflowId).query(getPayoutQuery),
    );
  } catch {
    return readModel;
  }
}

/** What a route reading the payout of its path (`:id`) asks the API key's lookup to read too (auth.ts). */
export function payoutOfPath(request: FastifyRequest): { payoutId?: string } {
  const { id } = request.params as { id?: unknown };
  return typeof id === 'string' && isUuid(id) ? { payoutId: id.toLowerCase() } : {};
}
