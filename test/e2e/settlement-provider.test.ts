import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import type { PayoutRecord, PayoutResponse } from '../../src/domain/payout';
import { payoutWorkflowId } from '../../src/workflows/payout.contract';
import { payoutWorkflow } from '../../src/workflows/payout.workflow';
import { payoutInput } from '../support/payouts';
import { useStack } from '../support/stack';
import { until } from '../support/until';

// Provider-mode settlement on real servers: the sandbox converts the PIX payment, sends USDT on
// anvil (chain id 42161), and the worker verifies the transfer on chain before COMPLETED.
describe('provider settlement (dev server, PostgreSQL, anvil, sandbox, worker, api)', () => {
  const stack = useStack();
  let apiKey: string;
  let partnerId: string;

  beforeAll(async () => {
    ({ apiKey, partnerId } = await stack.createPartner());
  });

  const transfersTo = (to: `0x${string}`) => stack.chain.transfersTo(to);

  /** The read-model row once it shows `status` (it is written just after the workflow's state). */
  const readModel = (id: string, status: string): Promise<Record<string, unknown>> =>
    until(`the read model of ${id} to show ${status}`, async () => {
      const { rows } = await stack.db.query('SELECT * FROM payouts WHERE id = $1', [id]);
      const row = rows[0] as Record<string, unknown> | undefined;
      return row?.status === status ? row : undefined;
    });

  const create = async (receiver: `0x${string}`): Promise<PayoutResponse> =>
    (await stack.createPayout(apiKey, { receiver_wallet: receiver })).payout;

  it('completes with exactly one USDT Transfer of settled_amount_usdt to receiver_wallet', async () => {
    const receiver = privateKeyToAddress(generatePrivateKey());
    const payout = await create(receiver);
    await stack.pay(payout.pix_copy_paste);
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED']);

    expect(done).toMatchObject({
      status: 'COMPLETED',
      settled_amount_usdt: 17.825311, // 100 / (5.50 x 1.02): the sandbox's rate and spread
      min_amount_usdt: 17.152658,
      blockchain_network: 'Arbitrum One',
      blockchain_chain_id: 42161,
      block_explorer_url: `https://arbiscan.io/tx/${done.blockchain_tx_id}`,
    });
    expect(done.blockchain_tx_id).toMatch(/^0x[0-9a-f]{64}$/);
    expect(Date.parse(done.paid_at!)).toBeLessThanOrEqual(Date.parse(done.confirmed_at!));

    const transfers = await transfersTo(receiver);
    expect(transfers).toEqual({ count: 1, total: 17_825_311n, txHashes: [done.blockchain_tx_id] });

    // The read model holds the same final state, for GET after Temporal's retention.
    const row = await readModel(payout.id, 'COMPLETED');
    expect(row).toMatchObject({
      settled_amount_usdt_units: 17_825_311n,
      blockchain_tx_id: done.blockchain_tx_id,
    });
    expect((row.paid_at as Date).toISOString()).toBe(done.paid_at);
    expect((row.confirmed_at as Date).toISOString()).toBe(done.confirmed_at);
  });

  it('fails on settlement_failed with the initial empty settlement fields and no transfer', async () => {
    const receiver = privateKeyToAddress(generatePrivateKey());
    const payout = await create(receiver);
    await stack.pay(payout.pix_copy_paste, 'settlement_failed');
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED']);

    expect(done).toMatchObject({
      status: 'FAILED',
      settled_amount_usdt: 0,
      blockchain_network: '',
      blockchain_chain_id: 0,
      blockchain_tx_id: '',
      block_explorer_url: '',
    });
    expect(done).not.toHaveProperty('paid_at');
    expect(done).not.toHaveProperty('confirmed_at');
    expect((await transfersTo(receiver)).count).toBe(0);
    expect(await readModel(payout.id, 'FAILED')).toMatchObject({
      failure_reason: 'provider_reported_failure',
    });
  });

  it('removes the charge at expiry: a late payer is refused by the bank, nothing is refunded or settled', async () => {
    // PIX_CHARGE_EXPIRY_SECONDS is at least 60 in config, too long for a real-time test, so this
    // payout is started directly with a 2 s expiry (the time-skipping tests cover the real hour).
    const receiver = privateKeyToAddress(generatePrivateKey());
    const input = payoutInput(
      {
        chargeExpirySeconds: 2,
        settlementTimeoutSeconds: stack.config.SETTLEMENT_TIMEOUT_SECONDS,
        settlementConfirmations: stack.config.SETTLEMENT_CONFIRMATIONS,
        chainId: stack.config.EVM_CHAIN_ID,
      },
      { partnerId, receiverWallet: receiver },
    );
    const handle = await stack.temporal.workflow.start(payoutWorkflow, {
      workflowId: payoutWorkflowId(input.payoutId),
      taskQueue: stack.config.TEMPORAL_TASK_QUEUE,
      args: [input],
    });
    const failed = (await handle.result()) as PayoutRecord;
    expect(failed).toMatchObject({ status: 'FAILED', failureReason: 'charge_expired' });

    // A bank does not know about an expiry, but it does refuse a removed charge: the payout removed
    // it at expiry, so the late payer's money never leaves and there is nothing to refund.
    await expect(stack.pay(failed.pixCopyPaste)).rejects.toThrow(/answered 410/);
    const status = await fetch(`${stack.sandboxUrl}/pix/charges/${failed.providerChargeId}`);
    expect(await status.json()).toMatchObject({ status: 'removed', payments: [] });
    const { rows } = await stack.db.query('SELECT 1 FROM refund_cases WHERE payout_id = $1', [
      input.payoutId,
    ]);
    expect(rows).toEqual([]);

    const after = await stack.waitForStatus(apiKey, input.payoutId, [
      'PENDING',
      'PROCESSING',
      'COMPLETED',
      'FAILED',
    ]);
    expect(after.status).toBe('FAILED');
    // Only the provider-event workflow that handled the payment could start a settlement: once every
    // one of them has ended, nothing can move any more, and nothing did.
    const queue = `WorkflowType = 'providerEventWorkflow' AND TaskQueue = '${stack.config.TEMPORAL_TASK_QUEUE}'`;
    await until('no provider-event workflow running', async () => {
      for await (const wf of stack.temporal.workflow.list({
        query: `${queue} AND ExecutionStatus = 'Running'`,
      }))
        if (wf.workflowId) return undefined;
      return true;
    });
    expect((await transfersTo(receiver)).count).toBe(0);
  });
});
