import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { countTransfersTo } from '../../src/adapters/chain/usdt-ledger';
import type { PayoutRecord } from '../../src/domain/payout';
import {
  getPayoutQuery,
  payoutWorkflowId,
  type PayoutWorkflowInput,
} from '../../src/workflows/payout.contract';
import { payoutWorkflow } from '../../src/workflows/payout.workflow';
import { startStack, VALID_PAYOUT, type TestStack } from '../support/stack';

// The settlement deadline on real servers (dev server, sandbox, anvil). SETTLEMENT_TIMEOUT_SECONDS
// is at least 60 in config, too long for a real-time test, so these payouts are started directly
// with a deadline of seconds (the time-skipping tests cover the real six hours). The chain is
// driven block by block: anvil mines only when the test says so.

async function rpc<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('settlement deadline (real servers, chain mined by the test)', () => {
  let stack: TestStack;
  let partnerId: string;

  beforeAll(async () => {
    stack = await startStack();
    ({ partnerId } = await stack.createPartner());
    await rpc(stack.rpcUrl, 'evm_setAutomine', [false]);
  }, 120_000);
  afterAll(async () => {
    await rpc(stack?.rpcUrl, 'evm_setAutomine', [true]).catch(() => {});
    await stack?.close();
  });

  async function start(settlementTimeoutSeconds: number, settlementConfirmations: number) {
    const receiver = privateKeyToAddress(generatePrivateKey());
    const input: PayoutWorkflowInput = {
      payoutId: randomUUID(),
      partnerId,
      amountCentavos: '10000',
      minAmountUsdtUnits: '17152658',
      pixKey: VALID_PAYOUT.pix_key,
      pixKeyType: 'CPF',
      receiverWallet: receiver,
      createdAt: new Date().toISOString(),
      settings: {
        chargeExpirySeconds: 600,
        settlementTimeoutSeconds,
        settlementMode: 'provider',
        settlementConfirmations,
        chainId: 42161,
      },
    };
    const handle = await stack.temporal.workflow.start(payoutWorkflow, {
      workflowId: payoutWorkflowId(input.payoutId),
      taskQueue: stack.config.TEMPORAL_TASK_QUEUE,
      args: [input],
    });
    const charged = await until('the PIX charge', async () => {
      const p = await handle.query(getPayoutQuery);
      return p.pixCopyPaste ? p : undefined;
    });
    return { handle, receiver, charged };
  }

  /** The sandbox's USDT transfer, broadcast and waiting in the pool. */
  const sandboxTransferPending = () =>
    until('the sandbox transfer in the pool', async () => {
      const pool = await rpc<{ pending: Record<string, Record<string, { hash: string }>> }>(
        stack.rpcUrl,
        'txpool_content',
      );
      const sandboxWallet = stack.sandboxWallet.toLowerCase();
      const mine = Object.entries(pool.pending).find(([from]) => from.toLowerCase() === sandboxWallet);
      return mine ? Object.values(mine[1])[0]!.hash : undefined;
    });

  const processingAfter = async (handle: WorkflowHandle, moment: number) => {
    const p = await handle.query(getPayoutQuery);
    if (p.status !== 'PROCESSING')
      throw new Error(`payout left PROCESSING too early: ${p.status} ${p.failureReason ?? ''}`);
    return Date.now() > moment ? p : undefined;
  };

  it('a settlement not reported by a short deadline is no verdict: PROCESSING with settlement_overdue, COMPLETED once mined', async () => {
    const { handle, receiver, charged } = await start(3, 1);
    await stack.pay(charged.pixCopyPaste);
    const txHash = await sandboxTransferPending(); // sent, not mined: the provider cannot report it
    // The deadline passes: an attention item, never FAILED (the transfer may still land).
    await until('settlement_overdue raised', async () => {
      const p = await handle.query(getPayoutQuery);
      if (p.status !== 'PROCESSING')
        throw new Error(`payout left PROCESSING: ${p.status} ${p.failureReason ?? ''}`);
      const { rows } = await stack.db.query(
        `SELECT 1 FROM payout_attention WHERE payout_id = $1 AND kind = 'settlement_overdue' AND cleared_at IS NULL`,
        [charged.id],
      );
      return rows.length > 0 ? true : undefined;
    });
    await rpc(stack.rpcUrl, 'evm_mine');
    const done = (await handle.result()) as PayoutRecord;
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: txHash });
    expect(
      await countTransfersTo({ rpcUrl: stack.rpcUrl, usdtAddress: stack.usdtAddress, to: receiver }),
    ).toMatchObject({ count: 1, txHashes: [txHash] });
  }, 150_000);

  it('a settlement reported just before the deadline still gets its verification window', async () => {
    // Two confirmations needed; the provider reports after one, before the deadline.
    const { handle, receiver, charged } = await start(15, 2);
    await stack.pay(charged.pixCopyPaste);
    const txHash = await sandboxTransferPending();
    await rpc(stack.rpcUrl, 'evm_mine'); // one confirmation: the sandbox reports the settlement
    await until('the settlement signalled to the payout', async () => {
      const { events } = await handle.fetchHistory();
      const signals = (events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes);
      return signals.length >= 2 ? true : undefined; // the payment, then the settlement
    });
    // The deadline runs from PROCESSING; the report arrived before it (else this proves nothing).
    const processing = await handle.query(getPayoutQuery);
    expect(processing.status).toBe('PROCESSING');
    const deadline = Date.parse(processing.updatedAt) + 15_000;
    expect(Date.now()).toBeLessThan(deadline);
    // The deadline passes with the transfer one confirmation short: the payout keeps verifying.
    await until('the deadline passed, still PROCESSING', () => processingAfter(handle, deadline + 2_000));
    await rpc(stack.rpcUrl, 'evm_mine'); // the second confirmation
    const done = (await handle.result()) as PayoutRecord;
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: txHash });
    expect(
      await countTransfersTo({ rpcUrl: stack.rpcUrl, usdtAddress: stack.usdtAddress, to: receiver }),
    ).toMatchObject({ count: 1, txHashes: [txHash] });
  }, 120_000);
});
