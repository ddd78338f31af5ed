/**
 * Defects planted in the decision core, each one a way the money rule was once broken or could be:
 * the simulator must catch every one (`npm run simulate -- --plant <name>`), or its budget of worlds
 * proves less than it claims. Each is the real core with one verdict taken too early, or one fact
 * folded in wrong.
 */
import * as core from '../../src/domain/provider-settlement-core';
import type { ProviderSettlementKnowledge } from '../../src/domain/provider-settlement-knowledge';
import { REAL_CORE, type Core } from './run-world';

const mutant = (decide: Core['decide']): Core => ({ ...REAL_CORE, decide });
const confirmed = (k: ProviderSettlementKnowledge) => k.transactions.some((t) => t.chain === 'confirmed');

export const PLANTED: Record<string, { what: string; core: Core }> = {
  'earlier-request-forgotten': {
    what: 'a request sent by a run a reset undid taken for one that never reached the provider',
    core: {
      ...REAL_CORE,
      evolve: (k, fact) =>
        fact.kind === 'requested_by_earlier_run'
          ? REAL_CORE.evolve(k, { kind: 'request_refused', at: fact.at, local: false, detail: 'forgotten' })
          : REAL_CORE.evolve(k, fact),
    },
  },
  'refusal-is-final': {
    what: 'a refusal of the request taken as final after an attempt whose answer was lost',
    core: mutant((k, now) =>
      k.requests.at(-1)?.outcome === 'refused' && k.transactions.length === 0
        ? { kind: 'fail', reason: 'settlement_request_failed' }
        : core.decide(k, now),
    ),
  },
  'failed-status-is-final': {
    what: 'a "failed" status without a hash taken as final after a transaction was named',
    core: mutant((k, now) =>
      k.providerSays?.status === 'failed' && k.providerSays.txHash === undefined && !confirmed(k)
        ? { kind: 'fail', reason: 'provider_reported_failure' }
        : core.decide(k, now),
    ),
  },
  'revert-is-final': {
    what: 'a reverted transaction taken as proof before the provider calls it failed',
    core: mutant((k, now) =>
      k.transactions.some((t) => t.chain === 'reverted') && !confirmed(k)
        ? { kind: 'fail', reason: 'transfer_reverted' }
        : core.decide(k, now),
    ),
  },
  'mismatch-completes': {
    what: "a transfer the chain shows not paying the receiver completed on the provider's word",
    core: mutant((k, now) => {
      const tx = k.transactions.find((t) => t.chain === 'mismatch' && t.amountUnits !== undefined);
      return tx && !confirmed(k)
        ? {
            kind: 'complete',
            txHash: tx.txHash,
            amountUnits: tx.amountUnits!,
            confirmedAt: undefined,
            review: [],
          }
        : core.decide(k, now);
    }),
  },
};
