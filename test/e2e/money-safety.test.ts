import { createHash } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { PayoutResponse } from '../../src/domain/payout';
import { payoutWorkflowId } from '../../src/workflows/payout.contract';
import { providerEventWorkflowId } from '../../src/workflows/provider-event.contract';
import { useStack } from '../support/stack';
import { until } from '../support/until';

// What is paid is what is settled, on real servers (dev server, PostgreSQL, anvil, sandbox, worker,
// api): wrong amounts and repeats are refunded, a lost webhook is reconciled at expiry, a redelivered
// event is no second payment, a reset payout still gets its payment, a paid payout that fails is
// refunded. The charge expiry is the shortest the service accepts (60 s) for the reconciliation test.
describe('money safety (provider mode, real servers)', () => {
  const stack = useStack({ env: { PIX_CHARGE_EXPIRY_SECONDS: '60' } });
  let apiKey: string;

  beforeAll(async () => {
    ({ apiKey } = await stack.createPartner());
  });

  const create = async (): Promise<PayoutResponse> => (await stack.createPayout(apiKey)).payout;

  interface RefundRow {
    event_id: string;
    reason: string;
    amount_brl: string;
    status: string;
  }
  const refundCases = async (payoutId: string) =>
    (
      await stack.db.query<RefundRow>(
        'SELECT event_id, reason, amount_brl, status FROM refund_cases WHERE payout_id = $1 ORDER BY created_at',
        [payoutId],
      )
    ).rows;

  /** Polls PostgreSQL until the payout has `n` refund cases (the observable end of a refund). */
  const untilRefundCases = (payoutId: string, n: number): Promise<RefundRow[]> =>
    until(
      `${n} refund cases of payout ${payoutId}`,
      async () => {
        const rows = await refundCases(payoutId);
        return rows.length >= n ? rows : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );

  // First, before the lost webhook's case is under way: its settlement sends a webhook of its own,
  // which must not be taken for the redelivery's next token.
  it('a redelivered payment event (same event id, new token) is not taken for a second payment', async () => {
    const payout = await create();
    const paid = await stack.payWith(payout.pix_copy_paste, {});
    await stack.waitForStatus(apiKey, payout.id, ['COMPLETED']);
    // Redelivered once the payout's workflow has closed: the event then meets the read model alone.
    await stack.temporal.workflow.getHandle(payoutWorkflowId(payout.id)).result();

    const tokensBefore = stack.webhookTokens.length;
    const res = await fetch(`${stack.sandboxUrl}/sandbox/notifications/redeliver`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ event_id: paid }),
    });
    expect(res.status).toBe(202);
    // The redelivery's own provider-event workflow is the observable end.
    const handle = await nextWebhookWorkflow(tokensBefore);
    await expect(handle.result()).resolves.toBe('duplicate_payment');
    expect(await refundCases(payout.id)).toEqual([]);
  }, 90_000);

  /** The lost webhook's case, started in the nested describe's beforeAll: its minute to expiry runs meanwhile. */
  async function lostWebhook(): Promise<void> {
    const payout = await create();
    const paid = await stack.payWith(payout.pix_copy_paste, { notify: false });
    const status = await fetch(`${stack.sandboxUrl}/pix/charges/${await chargeIdOf(payout.id)}`);
    expect(await status.json()).toMatchObject({
      status: 'paid',
      paid_amount_brl: '100.00',
      payments: [{ event_id: paid, amount_brl: '100.00' }],
    });
    expect((await stack.waitForStatus(apiKey, payout.id, ['PENDING'])).status).toBe('PENDING');
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED'], 150_000);
    expect(done.status).toBe('COMPLETED');
    expect(await refundCases(payout.id)).toEqual([]);
  }

  describe('while a payout whose webhook was lost waits for its charge to expire', () => {
    /** Started here, awaited by its own test (the last): the other cases run during its minute. */
    let lostWebhookCase: Promise<void>;
    beforeAll(() => {
      lostWebhookCase = lostWebhook();
      // Awaited in its own test; until then a failure must not count as unhandled.
      lostWebhookCase.catch(() => {});
    });

    it('refunds a payment of another amount and keeps waiting; settles the exact one; refunds a repeat', async () => {
      const payout = await create();
      const wrong = await stack.payWith(payout.pix_copy_paste, { amountBrl: 1 });
      const [refund] = await untilRefundCases(payout.id, 1);
      // Returned by itself (test/e2e/refund-returns.test.ts follows it to the end).
      expect(refund).toMatchObject({ event_id: wrong, amount_brl: '1.00' });
      expect(refund!.reason).toMatch(/paid 1\.00 BRL on a charge of 100\.00 BRL/);
      expect((await stack.waitForStatus(apiKey, payout.id, ['PENDING'])).status).toBe('PENDING');

      const right = await stack.payWith(payout.pix_copy_paste, {});
      const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED']);
      expect(done.status).toBe('COMPLETED');

      const again = await stack.payWith(payout.pix_copy_paste, {});
      const rows = await untilRefundCases(payout.id, 2);
      expect(rows.map((r) => r.event_id)).toEqual([wrong, again]);
      expect(rows.map((r) => r.event_id)).not.toContain(right);
      const { rows: settled } = await stack.db.query('SELECT payment_event_id FROM payouts WHERE id = $1', [
        payout.id,
      ]);
      expect(settled).toEqual([{ payment_event_id: right }]);
    }, 90_000);

    it('a paid payout that ends FAILED opens a refund case for its payment', async () => {
      const payout = await create();
      const paid = await stack.payWith(payout.pix_copy_paste, { outcome: 'settlement_failed' });
      const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED']);
      expect(done).toMatchObject({ status: 'FAILED' });
      const [refund] = await untilRefundCases(payout.id, 1);
      expect(refund).toMatchObject({ event_id: paid, amount_brl: '100.00' });
      expect(refund!.reason).toMatch(/payout failed \(provider_reported_failure\)/);
      // Not a kind the default policy returns by itself: it waits for an operator's approval.
      await until(
        'the case to await approval',
        async () => ((await refundCases(payout.id))[0]?.status === 'awaiting_approval' ? true : undefined),
        { timeoutMs: 30_000, intervalMs: 200 },
      );
    }, 90_000);

    /** An operator's `temporal workflow reset` to the payout's last completed workflow task: a new run. */
    async function resetByOperator(payoutId: string): Promise<{ before: string; after: string }> {
      const workflowId = payoutWorkflowId(payoutId);
      const before = await stack.temporal.workflow.getHandle(workflowId).describe();
      // POST answers once the workflow is started (D81): its first task may still be to come.
      const lastTaskCompleted = await until('a completed workflow task to reset to', async () => {
        const history = await stack.temporal.workflow.getHandle(workflowId).fetchHistory();
        return [...(history.events ?? [])].reverse().find((e) => e.workflowTaskCompletedEventAttributes);
      });
      const { runId } = await stack.temporal.workflowService.resetWorkflowExecution({
        namespace: stack.testEnv.namespace ?? 'default',
        workflowExecution: { workflowId, runId: before.runId },
        reason: 'test: operator reset',
        workflowTaskFinishEventId: lastTaskCompleted.eventId,
        requestId: crypto.randomUUID(),
      });
      expect(runId).not.toBe(before.runId);
      return { before: before.runId, after: runId! };
    }
    const storedRun = async (payoutId: string) =>
      (await stack.db.query<{ run_id: string }>('SELECT run_id FROM payouts WHERE id = $1', [payoutId]))
        .rows[0]?.run_id;

    it('a payout reset by an operator still receives its payment, and the read model follows the new run', async () => {
      const payout = await create();
      const runs = await resetByOperator(payout.id);
      // The read model still names the first run: the payment must reach the new one all the same.
      expect(await storedRun(payout.id)).toBe(runs.before);

      await stack.pay(payout.pix_copy_paste);
      const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED']);
      expect(done.status).toBe('COMPLETED');
      expect(await refundCases(payout.id)).toEqual([]);
      // The new run's writes were taken (docs/decisions.md D34), not ignored as another run's.
      expect(await storedRun(payout.id)).toBe(runs.after);
    }, 90_000);

    it('a payout reset by an operator is cancelled through its current run', async () => {
      const payout = await create();
      const runs = await resetByOperator(payout.id);
      const res = await fetch(`${stack.apiUrl}/v1/payouts/${payout.id}/cancel`, {
        method: 'POST',
        headers: { 'x-api-key': apiKey },
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ id: payout.id, status: 'FAILED' });
      const closed = await stack.temporal.workflow.getHandle(payoutWorkflowId(payout.id)).describe();
      expect(closed.runId).toBe(runs.after);
      expect(closed.status.name).toBe('COMPLETED');
      expect(await storedRun(payout.id)).toBe(runs.after);
    }, 90_000);

    it('a payment whose webhook was lost is found at expiry and settled', async () => {
      await lostWebhookCase;
    }, 180_000);
  });

  async function chargeIdOf(payoutId: string): Promise<string> {
    const { rows } = await stack.db.query<{ provider_charge_id: string }>(
      'SELECT provider_charge_id FROM payouts WHERE id = $1',
      [payoutId],
    );
    return rows[0]!.provider_charge_id;
  }

  /**
   * The provider-event workflow of the next token this stack's provider sends after `count` tokens
   * (the stack's own tokens: other files' webhooks share the database, not the sandbox).
   */
  async function nextWebhookWorkflow(count: number) {
    const token = await until('the next webhook token', () => stack.webhookTokens[count]);
    const hash = createHash('sha256').update(token).digest('hex');
    const handle = stack.temporal.workflow.getHandle(providerEventWorkflowId('sandbox', hash));
    await until('its provider-event workflow', () =>
      handle.describe().then(
        () => true,
        (err: unknown) => {
          if (err instanceof WorkflowNotFoundError) return undefined;
          throw err;
        },
      ),
    );
    return handle;
  }
});
