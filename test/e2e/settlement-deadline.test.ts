import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { WorkflowHandle } from '@temporalio/client';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import type { PayoutRecord } from '../../src/domain/payout';
import { getPayoutQuery, payoutWorkflowId } from '../../src/workflows/payout.contract';
import { payoutWorkflow } from '../../src/workflows/payout.workflow';
import { historyOf, isIdle, signalsIn, timerOf } from '../support/history';
import { payoutInput } from '../support/payouts';
import { compiledEntry } from '../support/compiled';
import { useStack } from '../support/stack';
import { until } from '../support/until';

// The settlement deadline on real servers (dev server, sandbox, anvil): it raises an alert, it never
// decides (docs/decisions.md D33). SETTLEMENT_TIMEOUT_SECONDS is at least 60 in config, too long for a
// real-time test, so these payouts are started directly with a deadline of seconds (the time-skipping
// tests cover the real six hours). The chain is driven block by block: anvil mines only when the test
// says so. Every wait is on an event (an attention row, the workflow's history); no check reads the
// clock.

const ROOT = path.resolve(__dirname, '../..');
const runFile = promisify(execFile);

describe('settlement deadline (real servers, chain mined by the test)', () => {
  const stack = useStack();
  let partnerId: string;

  beforeAll(async () => {
    ({ partnerId } = await stack.createPartner());
    await stack.chain.setAutomine(false);
  });

  async function start(settlementTimeoutSeconds: number, settlementConfirmations: number) {
    const receiver = privateKeyToAddress(generatePrivateKey());
    const input = payoutInput(
      { chargeExpirySeconds: 600, settlementTimeoutSeconds, settlementConfirmations },
      { partnerId, receiverWallet: receiver },
    );
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
    until('the sandbox transfer in the pool', () => stack.chain.pendingFrom(stack.sandboxWallet));

  /** Fails at once if the payout has left PROCESSING: the deadline must never decide. */
  async function stillProcessing(handle: WorkflowHandle): Promise<PayoutRecord> {
    const p = await handle.query(getPayoutQuery);
    if (p.status !== 'PROCESSING')
      throw new Error(`payout left PROCESSING at its deadline: ${p.status} ${p.failureReason ?? ''}`);
    return p;
  }

  const openItems = async (payoutId: string) =>
    (
      await stack.db.query<{ kind: string }>(
        'SELECT kind FROM payout_attention WHERE payout_id = $1 AND cleared_at IS NULL ORDER BY kind',
        [payoutId],
      )
    ).rows.map((r) => r.kind);

  /**
   * The deadline has come and been handled: its overdue item is raised, and the workflow has nothing
   * left in progress from it. All the while, and after, the payout is PROCESSING.
   */
  async function pastTheDeadline(handle: WorkflowHandle, payoutId: string): Promise<void> {
    await until('the overdue item', async () => {
      await stillProcessing(handle);
      return (await openItems(payoutId)).includes('settlement_overdue') ? true : undefined;
    });
    await until('the workflow idle after its deadline', async () =>
      (await isIdle(handle)) ? true : undefined,
    );
    await stillProcessing(handle);
    expect((await handle.describe()).status.name).toBe('RUNNING');
  }

  it('never fails at a short deadline while the transfer is unmined: overdue, alerted, then COMPLETED once mined', async () => {
    const { handle, receiver, charged } = await start(3, 1);
    await stack.pay(charged.pixCopyPaste);
    const txHash = await sandboxTransferPending(); // sent, not mined: nothing proves it landed or not
    // Past the deadline it is still PROCESSING, with the overdue item naming it.
    await pastTheDeadline(handle, charged.id);
    await stack.chain.mine(); // the transfer lands late: the sandbox reports it, the chain proves it
    const done = (await handle.result()) as PayoutRecord;
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: txHash });
    expect(await stack.chain.transfersTo(receiver)).toMatchObject({ count: 1, txHashes: [txHash] });
    const refunds = await stack.db.query('SELECT 1 FROM refund_cases WHERE payout_id = $1', [charged.id]);
    expect(refunds.rowCount).toBe(0);
    expect(await openItems(charged.id)).toEqual([]);
  }, 90_000);

  /** The admin CLI as an operator runs it, against this stack's database and Temporal. */
  async function admin(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...stack.serviceEnv };
    try {
      const { stdout, stderr } = await runFile(
        process.execPath,
        [await compiledEntry('src/main/admin.ts'), ...args],
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
    await stack.chain.rpc('anvil_dropTransaction', [txHash]);
    await until('the overdue item', async () =>
      (await openItems(charged.id)).includes('settlement_overdue') ? true : undefined,
    );
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
    expect((await stack.chain.transfersTo(receiver)).count).toBe(0);
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

  it('a settlement reported before the deadline still gets its verification window', async () => {
    // Two confirmations needed; the provider reports after one. The deadline leaves the report ample
    // time to come first (a slow machine is told so below, not passed).
    const deadlineSeconds = 15;
    const { handle, receiver, charged } = await start(deadlineSeconds, 2);
    await stack.pay(charged.pixCopyPaste);
    const txHash = await sandboxTransferPending();
    await stack.chain.mine(); // one confirmation: the sandbox reports the settlement
    await until(
      'the settlement signalled to the payout',
      async () => (signalsIn(await historyOf(handle)).length >= 2 ? true : undefined), // the payment, then the settlement
    );
    // The deadline passes with the transfer one confirmation short: the payout keeps verifying.
    await pastTheDeadline(handle, charged.id);
    const events = await historyOf(handle);
    const deadline = timerOf(events, deadlineSeconds);
    const report = signalsIn(events)[1]!;
    expect({
      reportBeforeDeadline: report < deadline.fired,
      deadlineFired: deadline.fired > deadline.started,
    }).toEqual({
      reportBeforeDeadline: true,
      deadlineFired: true,
    });
    await stack.chain.mine(); // the second confirmation
    const done = (await handle.result()) as PayoutRecord;
    expect(done).toMatchObject({ status: 'COMPLETED', blockchainTxId: txHash });
    expect(await stack.chain.transfersTo(receiver)).toMatchObject({ count: 1, txHashes: [txHash] });
  }, 120_000);
});
