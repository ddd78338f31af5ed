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
  TX_HASH,
  waitForPayout,
  runPayout,
  useTimeSkippingEnv,
} from './harness';

// An unknown is never a verdict (docs/decisions.md D33), on the time-skipping test server: the
// provider or the chain not answering keeps the payout where it is, with an attention item, until
// proof arrives or an operator decides. Minutes of retry rounds pass in workflow time.
describe('payoutWorkflow: unknowns (time-skipping)', () => {
  const env = useTimeSkippingEnv();

  type Fake = ReturnType<typeof fakeActivities>;
  type Handle = Awaited<ReturnType<typeof startPayout>>;
  const kinds = (fake: Fake, name: 'raiseAttention' | 'clearAttention') =>
    fake.callsOf(name).map(([a]) => a as { kind?: string; kinds?: string[] });

  const run = <T>(fake: Fake, input: PayoutWorkflowInput, fn: (h: Handle) => Promise<T>): Promise<T> =>
    runPayout(env, fake, input, fn);

  it('keeps a payout PENDING past its expiry while the charge status cannot be read, then settles the payment it reports', async () => {
    let readable = false;
    const input = payoutInput();
    const fake = fakeActivities({
      fetchChargeStatus: async () => {
        if (!readable) throw ApplicationFailure.retryable('503 from the provider', 'ChargeStatusUnreadable');
        return {
          status: 'paid' as const,
          expiresAt: '2026-11-21T23:00:00.000Z',
          payments: [pixReceived(input.payoutId, { paidAt: '2026-11-21T22:59:00.000Z' } as never)],
        };
      },
    });
    const done = await run(fake, input, async (h) => {
      await waitForPayout(h, (p) => p.pixCopyPaste !== '');
      // An hour of expiry and a few minutes of failed reads pass in workflow time.
      await env.sleep('60 minutes');
      await skipUntil(env, () => fake.callsOf('raiseAttention').length > 0);
      expect((await h.query(getPayoutQuery)).status).toBe('PENDING');
      expect(kinds(fake, 'raiseAttention')).toEqual([
        expect.objectContaining({ kind: 'charge_status_unreadable' }),
      ]);
      readable = true;
      await h.signal(providerEventSignal, settlementCompleted(input.payoutId));
      return (await h.result()) as PayoutRecord;
    });
    expect(done).toMatchObject({ status: 'COMPLETED', paidAt: '2026-11-21T22:59:00.000Z' });
    expect(fake.callsOf('recordLatePayment')).toHaveLength(0);
    // Removed at the provider before the status was read, so no payment could come after it.
    expect(fake.calls.findIndex((c) => c.name === 'cancelPixCharge')).toBeLessThan(
      fake.calls.findIndex((c) => c.name === 'fetchChargeStatus'),
    );
    expect(kinds(fake, 'clearAttention')).toContainEqual(
      expect.objectContaining({ kinds: ['charge_status_unreadable'] }),
    );
  });

  it('lets an operator fail a payout whose charge status stays unreadable, and records who and why', async () => {
    const input = payoutInput();
    const fake = fakeActivities({
      fetchChargeStatus: async () => {
        throw ApplicationFailure.retryable('401 from the provider', 'ChargeStatusUnreadable');
      },
    });
    const done = await run(fake, input, async (h) => {
      await waitForPayout(h, (p) => p.pixCopyPaste !== '');
      await env.sleep('60 minutes');
      await skipUntil(env, () => fake.callsOf('raiseAttention').length > 0);
      await expect(
        h.executeUpdate(resolvePayoutUpdate, {
          args: [
            {
              decision: 'complete',
              decidedBy: 'ops',
              reason: 'x',
              txHash: `0x${'ab'.repeat(32)}`,
              amountUsdtUnits: '1',
            },
          ],
        }),
      ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/never paid/) } });
      const decided = await h.executeUpdate(resolvePayoutUpdate, {
        args: [{ decision: 'fail', decidedBy: 'ana@ops', reason: 'provider confirmed no payment' }],
      });
      expect(decided).toMatchObject({ status: 'FAILED', failureReason: 'operator_decision' });
      return (await h.result()) as PayoutRecord;
    });
    expect(done.status).toBe('FAILED');
    expect(fake.callsOf('recordOperatorDecision')).toEqual([
      [
        {
          payoutId: input.payoutId,
          decision: 'fail',
          decidedBy: 'ana@ops',
          reason: 'provider confirmed no payment',
        },
      ],
    ]);
  });

  it('retries a settlement request the provider answers "charge not paid" (a lagging replica), alerting, never failing', async () => {
    let attempts = 0;
    const input = payoutInput();
    const fake = fakeActivities({
      requestSettlement: async () => {
        if (++attempts < 20) throw ApplicationFailure.retryable('charge not paid', 'ChargeNotPaidYet');
        return { settlementId: 'stl_late', status: 'pending' as const };
      },
    });
    const done = await run(fake, input, async (h) => {
      await waitForPayout(h, (p) => p.pixCopyPaste !== '');
      await h.signal(providerEventSignal, pixReceived(input.payoutId));
      await skipUntil(env, () => attempts >= 20);
      await h.signal(providerEventSignal, settlementCompleted(input.payoutId));
      return (await h.result()) as PayoutRecord;
    });
    expect(done.status).toBe('COMPLETED');
    expect(kinds(fake, 'raiseAttention')).toEqual([
      expect.objectContaining({ kind: 'settlement_request_unanswered' }),
    ]);
    expect(attempts).toBeGreaterThanOrEqual(20);
  });

  it("uses the repeated request's answer: a settlement already failed with nothing sent is read and failed at once", async () => {
    const input = payoutInput();
    const fake = fakeActivities({
      requestSettlement: async () => ({ settlementId: 'stl_1', status: 'failed' as const }),
      fetchSettlementStatus: async () => ({
        status: 'failed' as const,
        chainId: 42161,
        failureReason: 'no liquidity',
      }),
    });
    const done = await run(fake, input, async (h) => {
      await waitForPayout(h, (p) => p.pixCopyPaste !== '');
      await h.signal(providerEventSignal, pixReceived(input.payoutId));
      return (await h.result()) as PayoutRecord;
    });
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'provider_reported_failure' });
    expect(fake.callsOf('fetchSettlementStatus')).toHaveLength(1);
    expect(fake.callsOf('recordLatePayment').map(([a]) => (a as { kind: string }).kind)).toEqual([
      'payout_failed',
    ]);
  });

  it('flags a settlement above what the payment buys at its quote, and still completes (the USDT is the receiver’s)', async () => {
    const input = { ...payoutInput(), maxExpectedUsdtUnits: '18000000' };
    const fake = fakeActivities();
    const done = await run(fake, input, async (h) => {
      await waitForPayout(h, (p) => p.pixCopyPaste !== '');
      await h.signal(providerEventSignal, pixReceived(input.payoutId));
      await h.signal(
        providerEventSignal,
        settlementCompleted(input.payoutId, { amountUsdt: '18.000001' } as never),
      );
      return (await h.result()) as PayoutRecord;
    });
    expect(done).toMatchObject({ status: 'COMPLETED', settledAmountUsdtUnits: '18000001' });
    expect(kinds(fake, 'raiseAttention')).toEqual([expect.objectContaining({ kind: 'settled_above_quote' })]);
    // Items for review outlive the payout: nothing clears it.
    expect(fake.callsOf('clearAttention')).toEqual([]);
  });

  it('does not flag a settlement at or under the bound', async () => {
    const input = { ...payoutInput(), maxExpectedUsdtUnits: '17825311' };
    const fake = fakeActivities();
    await run(fake, input, async (h) => {
      await waitForPayout(h, (p) => p.pixCopyPaste !== '');
      await h.signal(providerEventSignal, pixReceived(input.payoutId));
      await h.signal(providerEventSignal, settlementCompleted(input.payoutId));
      return h.result();
    });
    expect(fake.callsOf('raiseAttention')).toEqual([]);
  });

  it('a refusal after an attempt whose answer was lost is no proof: the report that comes later completes the payout', async () => {
    // The first try reaches the provider (it accepts and sends) but its answer is lost; the retry
    // gets a 400 ("already exists", or a gateway's).
    let attempts = 0;
    const input = payoutInput();
    const fake = fakeActivities({
      requestSettlement: async () => {
        if (++attempts === 1) throw ApplicationFailure.retryable('socket hang up', 'ProviderUnavailable');
        throw ApplicationFailure.create({
          message: 'settlement already exists',
          type: 'ProviderRejected',
          nonRetryable: true,
          details: [{ attempt: 1 }],
        });
      },
    });
    const done = await run(fake, input, async (h) => {
      await waitForPayout(h, (p) => p.pixCopyPaste !== '');
      await h.signal(providerEventSignal, pixReceived(input.payoutId));
      await skipUntil(env, () =>
        kinds(fake, 'raiseAttention').some((a) => a.kind === 'settlement_request_unanswered'),
      );
      expect((await h.query(getPayoutQuery)).status).toBe('PROCESSING');
      await h.signal(providerEventSignal, settlementCompleted(input.payoutId));
      return (await h.result()) as PayoutRecord;
    });
    expect(done).toMatchObject({ status: 'COMPLETED' });
    expect(fake.callsOf('recordLatePayment')).toHaveLength(0);
  });

  it('keeps the transaction the request named: a later "failed" without a hash waits for the chain, which completes it', async () => {
    let mined = false;
    const input = payoutInput();
    const fake = fakeActivities({
      requestSettlement: async () => ({
        settlementId: 'stl_1',
        status: 'broadcast' as const,
        txHash: TX_HASH,
      }),
      fetchSettlementStatus: async () => ({
        status: 'failed' as const,
        chainId: 42161,
        failureReason: 'internal',
      }),
      verifyUsdtTransfer: async (req) => {
        if (!mined) throw ApplicationFailure.retryable('not yet', 'NotYetConfirmed');
        // Mined and paying 17.825311 USDT: a check for another amount (0: none known) finds no such transfer.
        if ((req as { amountUnits: string }).amountUnits === '17825311') return 'confirmed';
        throw ApplicationFailure.retryable('no transfer of that amount', 'TransferMismatch');
      },
    });
    const done = await run(fake, input, async (h) => {
      await waitForPayout(h, (p) => p.pixCopyPaste !== '');
      await h.signal(providerEventSignal, pixReceived(input.payoutId));
      await skipUntil(env, () => fake.callsOf('fetchSettlementStatus').length >= 2);
      const waiting = await h.query(getPayoutQuery);
      expect(waiting.status).toBe('PROCESSING');
      // The operator cannot fail it either: only the chain decides a named transaction.
      await expect(
        h.executeUpdate(resolvePayoutUpdate, {
          args: [{ decision: 'fail', decidedBy: 'ops', reason: 'provider says failed' }],
        }),
      ).rejects.toMatchObject({
        cause: { message: expect.stringMatching(/only its proof ends the payout/) },
      });
      mined = true;
      await h.signal(providerEventSignal, settlementCompleted(input.payoutId));
      return (await h.result()) as PayoutRecord;
    });
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: TX_HASH });
    expect(fake.callsOf('recordLatePayment')).toHaveLength(0);
  });

  it('sends no settlement request for a receiver flagged during a provider outage, and lets an operator fail it', async () => {
    let flagged = false;
    const input = payoutInput();
    const fake = fakeActivities({
      requestSettlement: async (req) => {
        // The activity screens before every attempt (as the real one does).
        if (flagged && !(req as { released?: boolean }).released) {
          return { flagged: { kind: 'flagged' as const, source: 'denylist' as const, detail: 'listed' } };
        }
        throw ApplicationFailure.retryable('503', 'ProviderUnavailable');
      },
      screenReceiver: async () =>
        flagged
          ? { kind: 'flagged' as const, source: 'denylist' as const, detail: 'listed' }
          : { kind: 'clear' as const },
    });
    const done = await run(fake, input, async (h) => {
      await waitForPayout(h, (p) => p.pixCopyPaste !== '');
      await h.signal(providerEventSignal, pixReceived(input.payoutId));
      await skipUntil(env, () =>
        kinds(fake, 'raiseAttention').some((a) => a.kind === 'settlement_request_unanswered'),
      );
      flagged = true;
      await skipUntil(env, () => kinds(fake, 'raiseAttention').some((a) => a.kind === 'receiver_flagged'));
      const requests = fake.callsOf('requestSettlement').length;
      await env.sleep('2 hours');
      expect(fake.callsOf('requestSettlement')).toHaveLength(requests);
      return h.executeUpdate(resolvePayoutUpdate, {
        args: [
          {
            decision: 'fail',
            decidedBy: 'ops',
            reason: 'receiver listed; provider confirms nothing was sent',
          },
        ],
      });
    });
    expect(done).toMatchObject({ status: 'FAILED', failureReason: 'operator_decision' });
  });
});
