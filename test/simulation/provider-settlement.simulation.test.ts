import * as core from '../../src/domain/provider-settlement-core';
import type { ProviderSettlementKnowledge } from '../../src/domain/provider-settlement-core';
import { FIXED_SEEDS } from './fixed-seeds';
import { runWorld, type Core } from './run-world';
import { simulate } from './simulate';

// The provider settlement's decision core over seeded worlds (docs/decisions.md D85): CI's budget of
// worlds, the seeds that once found a defect, and defects planted in the core that the simulator
// must catch (a simulator that finds nothing proves nothing until it is shown to find something).
const BUDGET = 20_000;

describe('world simulator: provider settlement', () => {
  it(`holds the money rule over ${BUDGET} seeded worlds`, () => {
    const summary = simulate(1, BUDGET);
    const found = summary.violations
      .slice(0, 3)
      .map((v) => `seed ${v.seed}: ${v.violations.join('; ')}\n${v.trace.join('\n')}`);
    expect(found).toEqual([]);
    // The worlds reach every ending, or the budget proves less than it says.
    expect(summary.outcomes.COMPLETED).toBeGreaterThan(BUDGET / 4);
    expect(summary.outcomes.FAILED).toBeGreaterThan(BUDGET / 10);
    expect(summary.outcomes.waiting).toBeGreaterThan(BUDGET / 50);
  });

  it.each(FIXED_SEEDS)('seed $seed ($found) holds', ({ seed }) => {
    expect(runWorld(seed).violations).toEqual([]);
  });

  it('replays a world exactly from its seed', () => {
    expect(runWorld(4242).trace).toEqual(runWorld(4242).trace);
  });

  const mutant = (decide: Core['decide']): Core => ({ ...core, decide });
  const fail = { kind: 'fail' } as const;
  const PLANTED: [string, Core][] = [
    [
      'a refusal of the request taken as final after an attempt whose answer was lost',
      mutant((k, now) =>
        k.requests.at(-1)?.outcome === 'refused' && k.transactions.length === 0
          ? { ...fail, reason: 'settlement_request_failed' }
          : core.decide(k, now),
      ),
    ],
    [
      'a "failed" status without a hash taken as final after a transaction was named',
      mutant((k, now) =>
        k.providerSays?.status === 'failed' && k.providerSays.txHash === undefined && !confirmed(k)
          ? { ...fail, reason: 'provider_reported_failure' }
          : core.decide(k, now),
      ),
    ],
    [
      'the request sent again without screening the receiver',
      mutant((k, now) => {
        const step = core.decide(k, now);
        return step.kind === 'screen' ? { kind: 'request' } : step;
      }),
    ],
    [
      'a reverted transaction taken as proof before the provider calls it failed',
      mutant((k, now) =>
        k.transactions.some((t) => t.chain === 'reverted') && !confirmed(k)
          ? { ...fail, reason: 'transfer_reverted' }
          : core.decide(k, now),
      ),
    ],
  ];

  it.each(PLANTED)('catches a planted defect: %s', (_name, planted) => {
    const summary = simulate(1, BUDGET, undefined, (seed, options) => runWorld(seed, options, planted));
    expect(summary.violations.length).toBeGreaterThan(0);
  });
});

function confirmed(k: ProviderSettlementKnowledge): boolean {
  return k.transactions.some((t) => t.chain === 'confirmed');
}
