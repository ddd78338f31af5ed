import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
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
import { rpc } from '../support/json-rpc';

// The settlement deadline on real servers (dev server, sandbox, anvil): it raises an alert, it never
// decides (docs/decisions.md D33). SETTLEMENT_TIMEOUT_SECONDS is at least 60 in config, too long for a
// real-time test, so these payouts are started directly with a deadline of seconds (the time-skipping
// tests cover the real six hours). The chain is driven block by block: anvil mines only when the test
// says so.

const ROOT = path.resolve(__dirname, '../..');
const runFile = promisify(execFile);

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

  it('never fails at a short deadline while the transfer is unmined: overdue, alerted, then COMPLETED once mined', async () => {
    const { handle, receiver, charged } = await start(3, 1);
    await stack.pay(charged.pixCopyPaste);
    const txHash = await sandboxTransferPending(); // sent, not mined: nothing proves it landed or not
    const processing = await handle.query(getPayoutQuery);
    const deadline = Date.parse(processing.updatedAt) + 3_000;
    // Past the deadline it is still PROCESSING, with the overdue item naming it.
    const openItems = async () =>
      (
        await stack.db.query<{ kind: string }>(
          'SELECT kind FROM payout_attention WHERE payout_id = $1 AND cleared_at IS NULL',
          [charged.id],
        )
      ).rows.map((r) => r.kind);
    await until('the overdue item', async () => {
      await processingAfter(handle, deadline);
      return (await openItems()).includes('settlement_overdue') ? true : undefined;
    });
    await until('well past the deadline, still PROCESSING', () => processingAfter(handle, deadline + 5_000));
    await rpc(stack.rpcUrl, 'evm_mine'); // the transfer lands late: the sandbox reports it, the chain proves it
    const done = (await handle.result()) as PayoutRecord;
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: txHash });
    expect(
      await countTransfersTo({ rpcUrl: stack.rpcUrl, usdtAddress: stack.usdtAddress, to: receiver }),
    ).toMatchObject({ count: 1, txHashes: [txHash] });
    const refunds = await stack.db.query('SELECT 1 FROM refund_cases WHERE payout_id = $1', [charged.id]);
    expect(refunds.rowCount).toBe(0);
    expect(await openItems()).toEqual([]);
  }, 90_000);

  /** The admin CLI as an operator runs it, against this stack's database and Temporal. */
  async function admin(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      DATABASE_URL: stack.config.DATABASE_URL,
      TEMPORAL_ADDRESS: stack.config.TEMPORAL_ADDRESS,
      TEMPORAL_NAMESPACE: stack.config.TEMPORAL_NAMESPACE,
      ...(stack.config.PAYLOAD_ENCRYPTION_KEY
        ? { PAYLOAD_ENCRYPTION_KEY: stack.config.PAYLOAD_ENCRYPTION_KEY }
        : {}),
    };
    try {
      const { stdout, stderr } = await runFile(
        path.join(ROOT, 'node_modules/.bin/tsx'),
        ['src/main/admin.ts', ...args],
        { cwd: ROOT, env, timeout: 60_000 },
      );
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      if (typeof e.code !== 'number') throw err;
      return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
  }

  it('an operator fails a payout whose provider went silent after its transfer was dropped: recorded, refunded', async () => {
    const { handle, receiver, charged } = await start(3, 1);
    await stack.pay(charged.pixCopyPaste);
    const txHash = await sandboxTransferPending();
    // The transfer leaves the pool for good (a node restart, a replaced nonce): nothing will land, and
    // the provider, waiting for a receipt, reports nothing. Only a person can find that out.
    await rpc(stack.rpcUrl, 'anvil_dropTransaction', [txHash]);
    await until('the overdue item', async () => {
      const { rows } = await stack.db.query(
        `SELECT 1 FROM payout_attention WHERE payout_id = $1 AND kind = 'settlement_overdue' AND cleared_at IS NULL`,
        [charged.id],
      );
      return rows.length > 0 ? true : undefined;
    });
    const listed = await admin(['payouts', 'attention', '--payout', charged.id]);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject({
      attention: [expect.objectContaining({ payout_id: charged.id, kind: 'settlement_overdue' })],
    });
    const refusedWithoutWhy = await admin([
      'payouts',
      'resolve',
      '--id',
      charged.id,
      '--decision',
      'fail',
      '--by',
      'ana',
    ]);
    expect(refusedWithoutWhy.code).toBe(2);

    const decided = await admin([
      'payouts',
      'resolve',
      '--id',
      charged.id,
      '--decision',
      'fail',
      '--by',
      'ana@ops',
      '--reason',
      'provider confirms the transfer was dropped and will not be sent again',
    ]);
    expect(decided).toMatchObject({ code: 0 });
    expect(JSON.parse(decided.stdout)).toMatchObject({
      id: charged.id,
      status: 'FAILED',
      failure_reason: 'operator_decision',
    });
    expect(await handle.result()).toMatchObject({ status: 'FAILED', failureReason: 'operator_decision' });
    const { rows: decisions } = await stack.db.query(
      'SELECT decision, decided_by, reason FROM operator_decisions WHERE payout_id = $1',
      [charged.id],
    );
    expect(decisions).toEqual([
      {
        decision: 'fail',
        decided_by: 'ana@ops',
        reason: 'provider confirms the transfer was dropped and will not be sent again',
      },
    ]);
    const { rows: refunds } = await stack.db.query('SELECT reason FROM refund_cases WHERE payout_id = $1', [
      charged.id,
    ]);
    expect(refunds).toEqual([{ reason: expect.stringMatching(/operator_decision/) }]);
    const open = await stack.db.query(
      'SELECT 1 FROM payout_attention WHERE payout_id = $1 AND cleared_at IS NULL',
      [charged.id],
    );
    expect(open.rowCount).toBe(0);
    expect(
      (await countTransfersTo({ rpcUrl: stack.rpcUrl, usdtAddress: stack.usdtAddress, to: receiver })).count,
    ).toBe(0);
    // A second decision finds the payout ended.
    const again = await admin([
      'payouts',
      'resolve',
      '--id',
      charged.id,
      '--decision',
      'fail',
      '--by',
      'bo',
      '--reason',
      'x',
    ]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/ended|already/);
  }, 120_000);

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
