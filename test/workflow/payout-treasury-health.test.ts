import { ApplicationFailure } from '@temporalio/common';
import type { PayoutRecord } from '../../src/domain/payout';
import {
  getPayoutQuery,
  providerEventSignal,
  resolvePayoutUpdate,
  type PayoutWorkflowInput,
} from '../../src/workflows/payout.contract';
import {
  fakeActivities,
  notYet,
  payoutInput,
  pixReceived,
  skipUntil,
  startPayout,
  TREASURY_TX_HASH,
  waitForPayout,
  withWorker,
  useTimeSkippingEnv,
} from './harness';

// Treasury health (treasury mode), on the time-skipping server: a treasury that cannot send, or a
// transfer queued behind a nonce gap, is the operator's to fix. The paid payout waits in PROCESSING
// with an attention item naming the cause, never FAILED and never a refund case, and goes on by
// itself once the treasury can send again. Rounds of retries pass in workflow time.
describe('payoutWorkflow: treasury health (time-skipping)', () => {
  const env = useTimeSkippingEnv();

  type Fake = ReturnType<typeof fakeActivities>;
  type Handle = Awaited<ReturnType<typeof startPayout>>;
  const raised = (fake: Fake) =>
    fake.callsOf('raiseAttention').map(([a]) => a as { kind: string; detail: string });
  const cleared = (fake: Fake) =>
    fake.callsOf('clearAttention').flatMap(([a]) => (a as { kinds: string[] }).kinds);
  const blocked = () =>
    ApplicationFailure.retryable(
      'treasury cannot send (blocked_by_issuer): 0xabc is on the blocklist of the token',
      'TreasuryCannotSend',
    );

  function run<T>(fake: Fake, input: PayoutWorkflowInput, fn: (h: Handle) => Promise<T>): Promise<T> {
    return withWorker(env, fake.activities, async (taskQueue) =>
      fn(await startPayout(env, taskQueue, input)),
    );
  }

  async function paid(h: Handle, input: PayoutWorkflowInput): Promise<void> {
    await waitForPayout(h, (p) => p.pixCopyPaste !== '');
    await h.signal(providerEventSignal, pixReceived(input.payoutId));
  }

  it('a treasury blocked before signing: the payout waits with treasury_cannot_send, then completes once unblocked', async () => {
    let canSend = false;
    const input = payoutInput({ settlementMode: 'treasury' });
    const fake = fakeActivities({
      sendTreasuryTransfer: async () => {
        if (!canSend) throw blocked();
        return { txHash: TREASURY_TX_HASH };
      },
    });
    const done = await run(fake, input, async (h) => {
      await paid(h, input);
      await skipUntil(env, () => raised(fake).length > 0);
      expect(raised(fake)).toEqual([
        {
          payoutId: input.payoutId,
          kind: 'treasury_cannot_send',
          detail: expect.stringMatching(/blocklist/),
        },
      ]);
      // Another hour of rounds: still waiting, the item raised once.
      await env.sleep('1 hour');
      expect((await h.query(getPayoutQuery)).status).toBe('PROCESSING');
      expect(raised(fake).map((a) => a.kind)).toEqual(['treasury_cannot_send']);
      canSend = true;
      return (await h.result()) as PayoutRecord;
    });
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: TREASURY_TX_HASH });
    expect(fake.savedStatuses()).toEqual(['PENDING', 'PENDING', 'PROCESSING', 'COMPLETED']);
    expect(cleared(fake)).toContain('treasury_cannot_send');
    expect(fake.callsOf('recordLatePayment')).toHaveLength(0);
    expect(fake.callsOf('confirmTreasuryTransfer')).toHaveLength(1);
  });

  it('a transfer mined and reverted by the treasury is sent again once it can send, and completes with the new one', async () => {
    const second = `0x${'ef'.repeat(32)}` as const;
    let sends = 0;
    let canSend = true;
    const input = payoutInput({ settlementMode: 'treasury' });
    const fake = fakeActivities({
      sendTreasuryTransfer: async () => {
        if (!canSend) throw blocked();
        return { txHash: ++sends === 1 ? TREASURY_TX_HASH : second };
      },
      confirmTreasuryTransfer: async () => {
        if (sends === 1) {
          // The issuer blocked the treasury between signing and mining.
          canSend = false;
          return { status: 'reverted_by_sender' as const, txHash: TREASURY_TX_HASH };
        }
        return { status: 'confirmed' as const, txHash: second };
      },
    });
    const done = await run(fake, input, async (h) => {
      await paid(h, input);
      await skipUntil(env, () => raised(fake).length > 0);
      expect(raised(fake).map((a) => a.kind)).toEqual(['treasury_cannot_send']);
      expect((await h.query(getPayoutQuery)).status).toBe('PROCESSING');
      canSend = true;
      return (await h.result()) as PayoutRecord;
    });
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: second });
    expect(fake.savedStatuses()).toEqual(['PENDING', 'PENDING', 'PROCESSING', 'COMPLETED']);
    expect(fake.callsOf('recordLatePayment')).toHaveLength(0);
    // The same transfer asked for again: the activity signs it in a new round, at a new nonce.
    expect(fake.distinctCallsOf('sendTreasuryTransfer')).toEqual([
      [
        expect.objectContaining({
          payoutId: input.payoutId,
          to: input.receiverWallet,
          amountUnits: input.minAmountUsdtUnits,
        }),
      ],
    ]);
    expect(fake.callsOf('confirmTreasuryTransfer')).toHaveLength(2);
  });

  it('a transfer queued behind a nonce gap raises treasury_nonce_gap naming the nonces, cleared once it lands', async () => {
    let gapFilled = false;
    let mined = false;
    const input = payoutInput({ settlementMode: 'treasury' });
    const fake = fakeActivities({
      confirmTreasuryTransfer: async () => {
        if (!gapFilled) {
          throw ApplicationFailure.retryable(
            'treasury transfer at nonce 9 of 0xabc waits behind a nonce gap: nonce(s) 7, 8 in no transaction the node holds (chain count 7)',
            'TreasuryNonceGap',
          );
        }
        if (!mined) throw notYet();
        return { status: 'confirmed' as const, txHash: TREASURY_TX_HASH };
      },
    });
    const done = await run(fake, input, async (h) => {
      await paid(h, input);
      await skipUntil(env, () => raised(fake).some((a) => a.kind === 'treasury_nonce_gap'));
      expect(raised(fake)).toContainEqual({
        payoutId: input.payoutId,
        kind: 'treasury_nonce_gap',
        detail: expect.stringMatching(/nonce\(s\) 7, 8/),
      });
      expect((await h.query(getPayoutQuery)).status).toBe('PROCESSING');
      // Filled, not yet mined: the next round ends on a plain wait, and the gap's item is cleared.
      gapFilled = true;
      await skipUntil(env, () => cleared(fake).includes('treasury_nonce_gap'));
      expect((await h.query(getPayoutQuery)).status).toBe('PROCESSING');
      mined = true;
      return (await h.result()) as PayoutRecord;
    });
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: TREASURY_TX_HASH });
    expect(
      raised(fake)
        .map((a) => a.kind)
        .sort(),
    ).toEqual(['transfer_unconfirmed', 'treasury_nonce_gap']);
    expect(fake.callsOf('sendTreasuryTransfer')).toHaveLength(1);
  });

  it('an operator may fail a payout whose treasury cannot send with nothing signed; a signed transfer refuses it', async () => {
    let signed = true;
    const input = payoutInput({ settlementMode: 'treasury' });
    const fake = fakeActivities({
      sendTreasuryTransfer: async () => {
        throw blocked();
      },
      hasOpenTreasuryTransfer: async () => signed,
      closeTreasuryRounds: async () => (signed ? 'signed' : 'closed'),
    });
    const done = await run(fake, input, async (h) => {
      await paid(h, input);
      await skipUntil(env, () => raised(fake).some((a) => a.kind === 'treasury_cannot_send'));
      const fail = { decision: 'fail' as const, decidedBy: 'ana@ops', reason: 'treasury blocked for days' };
      // A transfer signed for it (an earlier round, say) may still land: refused, the payout goes on.
      await expect(h.executeUpdate(resolvePayoutUpdate, { args: [fail] })).rejects.toMatchObject({
        cause: { message: expect.stringMatching(/signed for this payout and may still land: no fail/) },
      });
      expect((await h.query(getPayoutQuery)).status).toBe('PROCESSING');
      signed = false;
      return h.executeUpdate(resolvePayoutUpdate, { args: [fail] });
    });
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'operator_decision' });
    expect(fake.callsOf('recordOperatorDecision')).toHaveLength(1);
  });
});
