import {
  attentionOf,
  decide,
  mayStillMoveUsdt,
  operatorMayNotFail,
} from '../../src/domain/provider-settlement-core';
import {
  beginProviderSettlement,
  evolve,
  MAX_LOOK_MS,
  REQUESTS_KEPT,
  type ProviderSettlementFact,
  type ProviderSettlementKnowledge,
} from '../../src/domain/provider-settlement-knowledge';
import {
  LONG_WAIT_AFTER_MS,
  LONG_WAIT_LOOK_MS,
  lookCapAfter,
  TREASURY_BURST_MS,
  TREASURY_FIRST_DAY_LOOK_MS,
  treasuryPauseAfter,
} from '../../src/domain/long-waits';

// How long waits are paced (D87): the rules on their own, and the provider settlement's knowledge
// under them. test/workflow/long-waits.test.ts waits 60 days through the real workflows.
const CHAIN = 42161;
const TX = `0x${'ab'.repeat(32)}` as const;
const HOUR = 3_600_000;

describe('long-wait pacing', () => {
  it("keeps a step's own cap for a day, then looks hourly", () => {
    expect(lookCapAfter(0, MAX_LOOK_MS)).toBe(MAX_LOOK_MS);
    expect(lookCapAfter(LONG_WAIT_AFTER_MS - 1, MAX_LOOK_MS)).toBe(MAX_LOOK_MS);
    expect(lookCapAfter(LONG_WAIT_AFTER_MS, MAX_LOOK_MS)).toBe(LONG_WAIT_LOOK_MS);
    // A step whose own cap is longer than an hour keeps it.
    expect(lookCapAfter(LONG_WAIT_AFTER_MS, 2 * HOUR)).toBe(2 * HOUR);
  });

  it('runs treasury rounds back to back for half an hour, then pauses 10 minutes, hourly past a day', () => {
    expect(treasuryPauseAfter(0)).toBe(0);
    expect(treasuryPauseAfter(TREASURY_BURST_MS - 1)).toBe(0);
    expect(treasuryPauseAfter(TREASURY_BURST_MS)).toBe(TREASURY_FIRST_DAY_LOOK_MS);
    expect(treasuryPauseAfter(LONG_WAIT_AFTER_MS)).toBe(LONG_WAIT_LOOK_MS);
    expect(treasuryPauseAfter(60 * LONG_WAIT_AFTER_MS)).toBe(LONG_WAIT_LOOK_MS);
  });
});

describe('provider settlement knowledge under the long-wait rules', () => {
  /** A settlement whose provider names TX as completed, the chain finding it mined without the payment. */
  function mismatched(rules: boolean): ProviderSettlementKnowledge {
    let k = beginProviderSettlement(CHAIN, 0, true, rules);
    const facts: ProviderSettlementFact[] = [
      { kind: 'request_answered', at: 1, local: true, settlementId: 'stl_1', status: 'pending' },
      statusNaming(2, '17.825311'),
      { kind: 'chain_checked', at: 3, txHash: TX, amountUnits: '17825311', verdict: 'mismatch' },
    ];
    for (const f of facts) k = evolve(k, f);
    return k;
  }
  function statusNaming(at: number, amountUsdt: string): ProviderSettlementFact {
    return {
      kind: 'status_read',
      at,
      status: { status: 'completed', chainId: CHAIN, txHash: TX, amountUsdt },
    };
  }

  it('keeps the mismatch item up while a transfer named again with the same amount is checked again; no operator fail meanwhile', () => {
    const k = evolve(mismatched(true), statusNaming(4, '17.825311'));
    expect(k.transactions[0]!.chain).toBe('unchecked');
    expect(attentionOf(k).transfer_mismatch).toMatch(/carries no unclaimed/);
    // The verdict is for the chain to give again, at once; until it does, the transfer may still pay.
    expect(decide(k, 4)).toEqual({ kind: 'verify', txHash: TX, amountUnits: '17825311' });
    expect(operatorMayNotFail(k)).toMatch(/the chain has not decided it/);
    const checked = evolve(k, {
      kind: 'chain_checked',
      at: 5,
      txHash: TX,
      amountUnits: '17825311',
      verdict: 'mismatch',
    });
    expect(attentionOf(checked).transfer_mismatch).toMatch(/carries no unclaimed/);
    expect(operatorMayNotFail(checked)).toBeUndefined();
  });

  it('keeps the item up through a second naming and a check the chain did not answer', () => {
    let k = evolve(mismatched(true), statusNaming(4, '17.825311'));
    k = evolve(k, statusNaming(5, '17.825311'));
    expect(attentionOf(k).transfer_mismatch).toMatch(/carries no unclaimed/);
    k = evolve(k, { kind: 'chain_checked', at: 6, txHash: TX, amountUnits: '17825311', verdict: 'unproven' });
    expect(attentionOf(k).transfer_mismatch).toMatch(/carries no unclaimed/);
    expect(operatorMayNotFail(k)).toMatch(/the chain has not decided it/);
    k = evolve(k, statusNaming(7, '17.825311'));
    expect(attentionOf(k).transfer_mismatch).toMatch(/carries no unclaimed/);
  });

  it('checks a transaction named again with another amount afresh: no mismatch item, no operator fail', () => {
    const k = evolve(mismatched(true), statusNaming(4, '20.000000'));
    expect(k.transactions[0]!.chain).toBe('unchecked');
    expect(attentionOf(k).transfer_mismatch).toBeUndefined();
    expect(operatorMayNotFail(k)).toMatch(/the chain has not decided it/);
  });

  it('without the rules (a run begun before them) a naming clears the item, as it always did', () => {
    const k = evolve(mismatched(false), statusNaming(4, '17.825311'));
    expect(attentionOf(k).transfer_mismatch).toBeUndefined();
    const ruled = evolve(k, { kind: 'long_wait_rules', at: 5 });
    expect(ruled.longWaitRules).toBe(true);
    expect(attentionOf(ruled).transfer_mismatch).toMatch(/carries no unclaimed/);
  });

  it('keeps its size however long the request goes unanswered, and never forgets that one may have reached the provider', () => {
    let k = beginProviderSettlement(CHAIN, 0, true, true);
    k = evolve(k, { kind: 'request_unanswered', at: 1, local: true, detail: 'socket hang up' });
    for (let at = 2; at < 10_000; at++) {
      k = evolve(k, { kind: 'request_refused', at, local: false, detail: 'gateway 400' });
    }
    expect(k.requests).toHaveLength(REQUESTS_KEPT);
    expect(k.earlierRequests).toEqual({ count: 9_998 - REQUESTS_KEPT + 1, mayHaveReached: true });
    expect(mayStillMoveUsdt(k)).toBe(true);
    expect(decide(k, 10_000).kind).not.toBe('fail');
    // Refused from the first attempt on: still the proof that nothing was sent.
    let refused = beginProviderSettlement(CHAIN, 0, true, true);
    for (let at = 1; at < 100; at++) {
      refused = evolve(refused, { kind: 'request_refused', at, local: false, detail: 'bad wallet' });
    }
    expect(decide(refused, 100)).toEqual({ kind: 'fail', reason: 'settlement_request_failed' });
  });

  it('asks an unanswered request hourly once it has gone unanswered a day', () => {
    let k = beginProviderSettlement(CHAIN, 0, true, true);
    k = evolve(k, { kind: 'request_unanswered', at: HOUR, local: false, detail: '503' });
    expect(k.nextLookAt).toBe(HOUR);
    for (let at = LONG_WAIT_AFTER_MS; at < 2 * LONG_WAIT_AFTER_MS; at = k.nextLookAt) {
      k = evolve(k, { kind: 'request_unanswered', at, local: false, detail: '503' });
    }
    expect(k.lookBackoffMs).toBe(LONG_WAIT_LOOK_MS);
  });

  it('looks hourly once the settlement has waited a day, every 10 minutes before', () => {
    let k = mismatched(true);
    const looks: number[] = [];
    for (let at = 10; at < 2 * LONG_WAIT_AFTER_MS;) {
      k = evolve(k, statusNaming(at, '17.825311'));
      looks.push(k.nextLookAt - at);
      at = k.nextLookAt;
    }
    expect(Math.max(...looks.slice(0, 20))).toBeLessThanOrEqual(MAX_LOOK_MS);
    expect(looks.at(-1)).toBe(LONG_WAIT_LOOK_MS);
    // Without the rules the looks stay at 10 minutes however long the wait.
    let old = mismatched(false);
    for (let i = 0, at = 10; i < 400; i++) {
      old = evolve(old, statusNaming(at, '17.825311'));
      at = old.nextLookAt;
    }
    expect(old.lookBackoffMs).toBe(MAX_LOOK_MS);
  });
});
