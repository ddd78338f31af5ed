import {
  attentionOf,
  decide,
  mayStillMoveUsdt,
  operatorMayNotFail,
} from '../../src/domain/provider-settlement-core';
import {
  beginProviderSettlement,
  evolve,
  type ProviderSettlementFact,
  type ProviderSettlementKnowledge,
} from '../../src/domain/provider-settlement-knowledge';

// The provider settlement's decision core on its own: facts in, the next step out. The world
// simulator (test/simulation) walks the orders; these are the cases by name.
const CHAIN = 42161;
const TX = `0x${'ab'.repeat(32)}` as const;
const OTHER_TX = `0x${'cd'.repeat(32)}` as const;

type Unstamped = ProviderSettlementFact extends infer F
  ? F extends { at: number }
    ? Omit<F, 'at'>
    : never
  : never;

function knowing(...facts: Unstamped[]): ProviderSettlementKnowledge {
  let k = beginProviderSettlement(CHAIN, 0, true);
  facts.forEach((f, i) => (k = evolve(k, { ...f, at: (i + 1) * 1000 } as ProviderSettlementFact)));
  return k;
}
const at = (k: ProviderSettlementKnowledge) => decide(k, 10 ** 12);

describe('provider settlement core', () => {
  it('asks for the settlement first, then waits for a report, then reads the status', () => {
    expect(decide(knowing(), 0)).toEqual({ kind: 'request' });
    const accepted = knowing({
      kind: 'request_answered',
      local: true,
      settlementId: 'stl_1',
      status: 'pending',
    });
    expect(decide(accepted, 1000)).toEqual({ kind: 'wait', until: 31_000 });
    expect(decide(accepted, 31_000)).toEqual({ kind: 'read_status', settlementId: 'stl_1' });
  });

  it('fails on a refusal of the very first request, with nothing else heard', () => {
    const k = knowing({ kind: 'request_refused', local: true, detail: 'bad wallet' });
    expect(at(k)).toEqual({ kind: 'fail', reason: 'settlement_request_failed' });
    expect(mayStillMoveUsdt(k)).toBe(false);
  });

  it('a refusal after an attempt whose answer was lost proves nothing', () => {
    const k = knowing(
      { kind: 'request_unanswered', local: true, detail: 'socket hang up' },
      { kind: 'request_refused', local: false, detail: 'settlement already exists' },
    );
    expect(mayStillMoveUsdt(k)).toBe(true);
    expect(at(k).kind).not.toBe('fail');
    expect(attentionOf(k).settlement_request_unanswered).toMatch(/refused after an earlier attempt/);
    // The request is sent again, to a receiver screened since the last try.
    expect(at(k)).toEqual({ kind: 'screen' });
    const screened = evolve(k, { kind: 'screened_clear', at: 10_000 });
    expect(decide(screened, 10 ** 12)).toEqual({ kind: 'request' });
  });

  it('keeps a transaction the request named: a later "failed" without a hash is no proof', () => {
    const k = knowing(
      { kind: 'request_answered', local: true, settlementId: 'stl_1', status: 'broadcast', txHash: TX },
      { kind: 'chain_checked', txHash: TX, amountUnits: '0', verdict: 'unproven' },
      { kind: 'status_read', status: { status: 'failed', chainId: CHAIN, failureReason: 'no liquidity' } },
    );
    expect(mayStillMoveUsdt(k)).toBe(true);
    expect(operatorMayNotFail(k)).toMatch(/only its proof ends the payout/);
    expect(at(k)).toEqual({ kind: 'verify', txHash: TX, amountUnits: '0' });
    // A hash without an amount is checked for a revert only: the chain confirming "0" is no payment.
    const checked = evolve(k, {
      kind: 'chain_checked',
      at: 9000,
      txHash: TX,
      amountUnits: '0',
      verdict: 'confirmed',
    });
    expect(decide(checked, 10 ** 12).kind).not.toBe('complete');
    expect(decide(checked, 10 ** 12).kind).not.toBe('fail');
  });

  it('fails on a status "failed" with nothing broadcast when no source ever named a transaction', () => {
    const k = knowing(
      { kind: 'request_answered', local: true, settlementId: 'stl_1', status: 'pending' },
      { kind: 'status_read', status: { status: 'failed', chainId: CHAIN } },
    );
    expect(at(k)).toEqual({ kind: 'fail', reason: 'provider_reported_failure' });
  });

  it('a webhook naming a transaction before a "failed" status keeps the payout waiting for the chain', () => {
    const k = knowing(
      { kind: 'request_answered', local: true, settlementId: 'stl_1', status: 'pending' },
      { kind: 'reported_completed', txHash: TX, amountUsdt: '17.5', chainId: CHAIN, confirmedAt: 'x' },
      { kind: 'status_read', status: { status: 'failed', chainId: CHAIN } },
    );
    expect(at(k)).toEqual({ kind: 'verify', txHash: TX, amountUnits: '17500000' });
  });

  it('completes on a confirmed transfer, with the amount the chain confirmed', () => {
    const k = knowing(
      { kind: 'request_answered', local: true, settlementId: 'stl_1', status: 'pending' },
      { kind: 'reported_completed', txHash: TX, amountUsdt: '17.5', chainId: CHAIN, confirmedAt: 'then' },
      { kind: 'chain_checked', txHash: TX, amountUnits: '17500000', verdict: 'confirmed' },
    );
    expect(at(k)).toEqual({
      kind: 'complete',
      txHash: TX,
      amountUnits: '17500000',
      confirmedAt: 'then',
      review: [],
    });
  });

  it('a revert the provider has not called failed is no proof; its failed status on that hash is', () => {
    const reverted = knowing(
      { kind: 'request_answered', local: true, settlementId: 'stl_1', status: 'pending' },
      { kind: 'reported_completed', txHash: TX, amountUsdt: '17.5', chainId: CHAIN, confirmedAt: 'x' },
      { kind: 'chain_checked', txHash: TX, amountUnits: '17500000', verdict: 'reverted' },
    );
    expect(mayStillMoveUsdt(reverted)).toBe(true);
    expect(at(reverted)).toEqual({ kind: 'read_status', settlementId: 'stl_1' });
    const called = evolve(reverted, {
      kind: 'status_read',
      at: 9000,
      status: { status: 'failed', chainId: CHAIN, txHash: TX },
    });
    expect(decide(called, 10 ** 12)).toEqual({ kind: 'fail', reason: 'transfer_reverted' });
    // Another hash named with the failure is verified, not taken as proof.
    const another = evolve(reverted, {
      kind: 'status_read',
      at: 9000,
      status: { status: 'failed', chainId: CHAIN, txHash: OTHER_TX },
    });
    expect(decide(another, 10 ** 12)).toMatchObject({ kind: 'verify', txHash: OTHER_TX });
  });

  it('a receiver flagged before the request is sent again stops the requests and waits, alerted', () => {
    const k = knowing(
      { kind: 'request_unanswered', local: true, detail: 'timeout' },
      { kind: 'request_unanswered', local: false, detail: 'timeout' },
      { kind: 'screened_flagged', source: 'denylist', detail: 'listed' },
    );
    expect(at(k)).toEqual({ kind: 'wait', until: undefined });
    expect(attentionOf(k).receiver_flagged).toMatch(/no request is sent again/);
    expect(mayStillMoveUsdt(k)).toBe(true);
  });

  it('a report on another chain is never a candidate, always an attention item', () => {
    const k = knowing(
      { kind: 'request_answered', local: true, settlementId: 'stl_1', status: 'pending' },
      { kind: 'reported_completed', txHash: TX, amountUsdt: '17.5', chainId: 1, confirmedAt: 'x' },
    );
    expect(at(k).kind).toBe('read_status');
    expect(attentionOf(k).transfer_mismatch).toMatch(/on chain 1, not 42161/);
  });
});
