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
  payoutInput,
  pixReceived,
  settlementCompleted,
  skipUntil,
  startPayout,
  waitForPayout,
  TREASURY_TX_HASH,
  withWorker,
  useTimeSkippingEnv,
} from './harness';

// The receiver is screened again right before the USDT is requested or signed (docs/decisions.md
// D45): a wallet flagged since POST is never paid by itself, an unreadable source is never a clear.
describe('payoutWorkflow: screening before money moves (time-skipping)', () => {
  const env = useTimeSkippingEnv();

  type Fake = ReturnType<typeof fakeActivities>;
  type Handle = Awaited<ReturnType<typeof startPayout>>;
  const raised = (fake: Fake) => fake.callsOf('raiseAttention').map(([a]) => (a as { kind: string }).kind);
  const sendingCalls = (fake: Fake) =>
    fake.calls.filter((c) => c.name === 'requestSettlement' || c.name === 'sendTreasuryTransfer');
  const flagged = async () => ({
    kind: 'flagged' as const,
    source: 'token_blocklist' as const,
    detail: 'blocked by the token issuer',
  });

  function run<T>(fake: Fake, input: PayoutWorkflowInput, fn: (h: Handle) => Promise<T>): Promise<T> {
    return withWorker(env, fake.activities, async (taskQueue) =>
      fn(await startPayout(env, taskQueue, input)),
    );
  }

  async function paid(h: Handle, input: PayoutWorkflowInput): Promise<void> {
    await waitForPayout(h, (p) => p.pixCopyPaste !== '');
    await h.signal(providerEventSignal, pixReceived(input.payoutId));
  }

  for (const mode of ['provider', 'treasury'] as const) {
    it(`${mode} mode: a receiver flagged since POST is not paid; an operator refunds the payer`, async () => {
      const input = payoutInput({ settlementMode: mode });
      const fake = fakeActivities({ screenReceiver: flagged });
      const done = await run(fake, input, async (h) => {
        await paid(h, input);
        await skipUntil(env, () => raised(fake).includes('receiver_flagged'));
        // Hours pass: nothing is sent, nothing fails by itself.
        await env.sleep('7 hours');
        expect((await h.query(getPayoutQuery)).status).toBe('PROCESSING');
        expect(sendingCalls(fake)).toEqual([]);
        // The decisions of an unknown do not apply to a flagged receiver.
        await expect(
          h.executeUpdate(resolvePayoutUpdate, {
            args: [{ decision: 'fail', decidedBy: 'ana', reason: 'x' }],
          }),
        ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/refund or release/) } });
        const decided = await h.executeUpdate(resolvePayoutUpdate, {
          args: [{ decision: 'refund', decidedBy: 'ana@ops', reason: 'issuer blocked the wallet' }],
        });
        expect(decided).toMatchObject({ status: 'FAILED', failureReason: 'receiver_flagged' });
        return (await h.result()) as PayoutRecord;
      });
      expect(done).toMatchObject({ status: 'FAILED', failureReason: 'receiver_flagged' });
      expect(sendingCalls(fake)).toEqual([]);
      // The payer's BRL goes to a refund case.
      expect(fake.callsOf('recordLatePayment')).toEqual([
        [expect.objectContaining({ payoutId: input.payoutId, kind: 'payout_failed' })],
      ]);
      expect(fake.callsOf('recordOperatorDecision')).toEqual([
        [expect.objectContaining({ decision: 'refund', decidedBy: 'ana@ops' })],
      ]);
    });

    it(`${mode} mode: an operator releases a flagged receiver and the payout is paid`, async () => {
      const input = payoutInput({ settlementMode: mode });
      const fake = fakeActivities({
        screenReceiver: flagged,
        // The treasury screens again before signing, unless the payout was released: it still flags.
        sendTreasuryTransfer: async (req) =>
          req.released ? { txHash: TREASURY_TX_HASH } : { flagged: await flagged() },
      });
      const done = await run(fake, input, async (h) => {
        await paid(h, input);
        await skipUntil(env, () => raised(fake).includes('receiver_flagged'));
        const released = await h.executeUpdate(resolvePayoutUpdate, {
          args: [
            { decision: 'release', decidedBy: 'ana@ops', reason: 'false positive, checked with issuer' },
          ],
        });
        expect(released.status).not.toBe('FAILED');
        if (mode === 'provider') await h.signal(providerEventSignal, settlementCompleted(input.payoutId));
        return (await h.result()) as PayoutRecord;
      });
      expect(done.status).toBe('COMPLETED');
      expect(sendingCalls(fake)).toHaveLength(1);
      expect(fake.callsOf('clearAttention')).toContainEqual([
        expect.objectContaining({ kinds: ['receiver_flagged'] }),
      ]);
      expect(fake.callsOf('recordLatePayment')).toEqual([]);
    });
  }

  it('keeps retrying while a screening source cannot be read, raises attention, and sends once it answers', async () => {
    let readable = false;
    const input = payoutInput();
    const fake = fakeActivities({
      screenReceiver: async () => {
        if (!readable) throw ApplicationFailure.retryable('oracle unreachable', 'ScreeningUnavailable');
        return { kind: 'clear' as const };
      },
    });
    const done = await run(fake, input, async (h) => {
      await paid(h, input);
      await skipUntil(env, () => raised(fake).includes('screening_unreadable'));
      expect(sendingCalls(fake)).toEqual([]);
      expect((await h.query(getPayoutQuery)).status).toBe('PROCESSING');
      readable = true;
      await skipUntil(env, () => sendingCalls(fake).length > 0);
      await h.signal(providerEventSignal, settlementCompleted(input.payoutId));
      return (await h.result()) as PayoutRecord;
    });
    expect(done.status).toBe('COMPLETED');
    expect(fake.callsOf('clearAttention')).toContainEqual([
      expect.objectContaining({ kinds: ['screening_unreadable'] }),
    ]);
  });

  it('screens once, right before sending, with the payout and its wallet', async () => {
    const input = payoutInput();
    const fake = fakeActivities();
    await run(fake, input, async (h) => {
      await paid(h, input);
      await h.signal(providerEventSignal, settlementCompleted(input.payoutId));
      return h.result();
    });
    // Provider mode asks, in the same call, whether a request of the payout is on record already.
    expect(fake.callsOf('screenReceiver')).toEqual([
      [{ payoutId: input.payoutId, wallet: input.receiverWallet, unlessRequested: true }],
    ]);
    const names = fake.calls.map((c) => c.name);
    expect(names.indexOf('screenReceiver')).toBeLessThan(names.indexOf('requestSettlement'));
  });

  it('treasury mode: a receiver flagged right before signing waits; released, its transfer is signed unscreened', async () => {
    const input = payoutInput({ settlementMode: 'treasury' });
    const fake = fakeActivities({
      sendTreasuryTransfer: async (req) =>
        req.released ? { txHash: TREASURY_TX_HASH } : { flagged: await flagged() },
    });
    const done = await run(fake, input, async (h) => {
      await paid(h, input);
      await skipUntil(env, () => raised(fake).includes('receiver_flagged'));
      // Inside the settlement step, the decision is for the flagged receiver, not the unknown outcome.
      await expect(
        h.executeUpdate(resolvePayoutUpdate, { args: [{ decision: 'fail', decidedBy: 'ana', reason: 'x' }] }),
      ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/refund or release/) } });
      await h.executeUpdate(resolvePayoutUpdate, {
        args: [{ decision: 'release', decidedBy: 'ana@ops', reason: 'issuer confirmed a false positive' }],
      });
      return (await h.result()) as PayoutRecord;
    });
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: TREASURY_TX_HASH });
    expect(
      fake.callsOf('sendTreasuryTransfer').map(([req]) => (req as { released?: boolean }).released),
    ).toEqual([undefined, true]);
  });

  it('treasury mode: a refund is refused while a transfer signed for the payout may still land; that transfer ends it', async () => {
    // Signed before a reset, found by the refund's check: the flagged wait ends, and only the chain decides.
    const input = payoutInput({ settlementMode: 'treasury' });
    const fake = fakeActivities({
      screenReceiver: flagged,
      hasOpenTreasuryTransfer: async () => true,
      closeTreasuryRounds: async () => 'signed' as const,
    });
    const done = await run(fake, input, async (h) => {
      await paid(h, input);
      await skipUntil(env, () => raised(fake).includes('receiver_flagged'));
      const refund = { decision: 'refund' as const, decidedBy: 'ana@ops', reason: 'listed' };
      await expect(h.executeUpdate(resolvePayoutUpdate, { args: [refund] })).rejects.toMatchObject({
        cause: { message: expect.stringMatching(/may still land/) },
      });
      return (await h.result()) as PayoutRecord;
    });
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: TREASURY_TX_HASH });
    expect(fake.callsOf('recordOperatorDecision')).toEqual([]);
    expect(fake.callsOf('confirmTreasuryTransfer')).toHaveLength(1);
  });

  it('treasury mode: flagged right before signing, a refund refused for a transfer signed meanwhile confirms that transfer', async () => {
    const input = payoutInput({ settlementMode: 'treasury' });
    // The send answers flagged; an attempt of it that outlived its lease signed all the same.
    const fake = fakeActivities({
      sendTreasuryTransfer: async () => ({ flagged: await flagged() }),
      hasOpenTreasuryTransfer: async () => true,
    });
    const done = await run(fake, input, async (h) => {
      await paid(h, input);
      await skipUntil(env, () => raised(fake).includes('receiver_flagged'));
      await expect(
        h.executeUpdate(resolvePayoutUpdate, {
          args: [{ decision: 'refund', decidedBy: 'ana@ops', reason: 'listed' }],
        }),
      ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/may still land/) } });
      return (await h.result()) as PayoutRecord;
    });
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: TREASURY_TX_HASH });
    expect(fake.callsOf('sendTreasuryTransfer')).toHaveLength(1);
    expect(fake.callsOf('confirmTreasuryTransfer')).toHaveLength(1);
    expect(fake.callsOf('closeTreasuryRounds')).toEqual([]);
  });

  it('treasury mode: flagged while its transfer waits unmined, the cancel that takes its nonce fails it, the payer refunded', async () => {
    const input = payoutInput({ settlementMode: 'treasury' });
    let cancelMined = false;
    const fake = fakeActivities({
      confirmTreasuryTransfer: async () => {
        if (!cancelMined) {
          throw ApplicationFailure.retryable('cancel 0xc0 signed at nonce 7', 'TreasuryTransferCancelling');
        }
        return { status: 'cancelled' as const, txHash: `0x${'c0'.repeat(32)}` as const, round: 0 };
      },
      // Signed and open until the cancel's proof: only that round's death closes it.
      hasOpenTreasuryTransfer: async () => !cancelMined,
      closeTreasuryRounds: async (req: { deadRound?: number }) =>
        req.deadRound === 0 ? ('closed' as const) : ('signed' as const),
    });
    const done = await run(fake, input, async (h) => {
      await paid(h, input);
      await skipUntil(env, () => raised(fake).includes('receiver_flagged'));
      // Whichever transaction is mined decides: no operator decision ends it meanwhile.
      await expect(
        h.executeUpdate(resolvePayoutUpdate, { args: [{ decision: 'fail', decidedBy: 'ana', reason: 'x' }] }),
      ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/may still land/) } });
      cancelMined = true;
      return (await h.result()) as PayoutRecord;
    });
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'receiver_flagged' });
    expect(fake.callsOf('closeTreasuryRounds')).toEqual([[{ payoutId: input.payoutId, deadRound: 0 }]]);
    expect(fake.callsOf('recordLatePayment')).toEqual([
      [expect.objectContaining({ payoutId: input.payoutId, kind: 'payout_failed' })],
    ]);
  });

  it('treasury mode: the flag is kept past a transfer signed meanwhile; that transfer gone, nothing new is signed until an operator decides', async () => {
    const input = payoutInput({ settlementMode: 'treasury' });
    let signedOpen = true;
    const fake = fakeActivities({
      sendTreasuryTransfer: async (req: { onlyResend?: boolean }) =>
        req.onlyResend ? { notSigned: 'receiver_flagged' as const } : { flagged: await flagged() },
      hasOpenTreasuryTransfer: async () => signedOpen,
      // The transfer an attempt signed meanwhile reverted by the treasury's fault: its round closes.
      confirmTreasuryTransfer: async () => {
        signedOpen = false;
        return { status: 'reverted_by_sender' as const, txHash: TREASURY_TX_HASH, round: 0 };
      },
    });
    const done = await run(fake, input, async (h) => {
      await paid(h, input);
      await skipUntil(env, () => raised(fake).includes('receiver_flagged'));
      const refund = { decision: 'refund' as const, decidedBy: 'ana@ops', reason: 'listed' };
      await expect(h.executeUpdate(resolvePayoutUpdate, { args: [refund] })).rejects.toMatchObject({
        cause: { message: expect.stringMatching(/may still land/) },
      });
      // Confirmed it is not: sent again only, nothing new signed, the operator asked again.
      await skipUntil(env, () => fake.callsOf('sendTreasuryTransfer').length === 2);
      await h.executeUpdate(resolvePayoutUpdate, { args: [{ ...refund, reason: 'listed, checked' }] });
      return (await h.result()) as PayoutRecord;
    });
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'receiver_flagged' });
    expect(
      fake.callsOf('sendTreasuryTransfer').map(([req]) => (req as { onlyResend?: boolean }).onlyResend),
    ).toEqual([undefined, true]);
    expect(
      fake.callsOf('confirmTreasuryTransfer').map(([req]) => (req as { cancel?: string }).cancel),
    ).toEqual(['flag_known']);
  });

  describe('provider mode, a settlement request on record from a run a reset undid', () => {
    const TX = `0x${'5e'.repeat(32)}` as const;
    /** Before settling, the payout asks whether a request is on record; later screenings are verdicts. */
    const onRecord = (settlementId: string | undefined, verdict: () => Promise<unknown>) =>
      (async (req: { unlessRequested?: boolean }) =>
        req.unlessRequested
          ? { kind: 'requested_before' as const, ...(settlementId !== undefined && { settlementId }) }
          : verdict()) as never;

    it('with its id: the payout reads that settlement and completes, requesting nothing', async () => {
      const input = payoutInput();
      const fake = fakeActivities({
        screenReceiver: onRecord('stl_before_reset', async () => ({ kind: 'clear' as const })),
        fetchSettlementStatus: async () => ({
          status: 'completed' as const,
          chainId: 42161,
          txHash: TX,
          amountUsdt: '17.825311',
        }),
      });
      const done = await run(fake, input, async (h) => {
        await paid(h, input);
        return (await h.result()) as PayoutRecord;
      });
      expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: TX });
      expect(fake.callsOf('fetchSettlementStatus')[0]).toEqual([
        { payoutId: input.payoutId, settlementId: 'stl_before_reset' },
      ]);
      expect(sendingCalls(fake)).toEqual([]);
      expect(fake.callsOf('screenReceiver')).toHaveLength(1);
    });

    it('flagged now: no refund decision ends it while the provider may settle; nothing is requested again', async () => {
      const input = payoutInput();
      const fake = fakeActivities({ screenReceiver: onRecord(undefined, flagged) });
      const done = await run(fake, input, async (h) => {
        await paid(h, input);
        await skipUntil(env, () => raised(fake).includes('receiver_flagged'));
        // The settlement's own wait: the screening's refund is not what is decided here.
        await expect(
          h.executeUpdate(resolvePayoutUpdate, {
            args: [{ decision: 'refund', decidedBy: 'ana', reason: 'listed' }],
          }),
        ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/fail or complete/) } });
        expect(sendingCalls(fake)).toEqual([]);
        // The provider settled all the same (the earlier run's request reached it).
        await h.signal(providerEventSignal, settlementCompleted(input.payoutId, { txHash: TX }));
        return (await h.result()) as PayoutRecord;
      });
      expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: TX });
      expect(sendingCalls(fake)).toEqual([]);
      expect(fake.callsOf('recordLatePayment')).toEqual([]);
    });
  });

  it('an operator may refund, never release, a payout whose screening cannot be read', async () => {
    const input = payoutInput();
    const fake = fakeActivities({
      screenReceiver: async () => {
        throw ApplicationFailure.retryable('oracle unreachable', 'ScreeningUnavailable');
      },
    });
    const done = await run(fake, input, async (h) => {
      await paid(h, input);
      await skipUntil(env, () => raised(fake).includes('screening_unreadable'));
      await expect(
        h.executeUpdate(resolvePayoutUpdate, {
          args: [{ decision: 'release', decidedBy: 'ana', reason: 'x' }],
        }),
      ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/only be refunded/) } });
      await h.executeUpdate(resolvePayoutUpdate, {
        args: [
          {
            decision: 'refund',
            decidedBy: 'ana@ops',
            reason: 'oracle retired; payer asked for the money back',
          },
        ],
      });
      return (await h.result()) as PayoutRecord;
    });
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'operator_decision' });
    expect(sendingCalls(fake)).toEqual([]);
    expect(fake.callsOf('recordLatePayment')).toEqual([
      [expect.objectContaining({ payoutId: input.payoutId, kind: 'payout_failed' })],
    ]);
  });
});
