import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createPartner } from '../../src/adapters/db/partners-repo';
import { upsertPayout } from '../../src/adapters/db/payouts-repo';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { findRefundCase, moveRefundCase, openRefundCase } from '../../src/adapters/db/refund-cases-repo';
import { recordSettlementAfterEnd } from '../../src/adapters/db/settlements-after-end-repo';
import { compiledEntry } from '../support/compiled';
import { testDatabaseUrl } from '../support/env';
import { completedPayout, pendingPayout } from '../support/payouts';
import { createDevServerEnv } from '../support/temporal';

// `admin refunds approve` as an operator runs it: a real CLI process against the test PostgreSQL and a
// Temporal dev server (the command connects to both). BRL is not returned while USDT may have left:
// a case whose payout got a settlement report after its end is refused, naming the transaction, before
// anything reaches its workflow (docs/decisions.md D85).
const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);

let db: Db;
let temporal: TestWorkflowEnvironment;

beforeAll(async () => {
  db = createPool(testDatabaseUrl(), 2);
  temporal = await createDevServerEnv();
}, 120_000);
afterAll(async () => {
  await temporal?.teardown();
  await db?.end();
});

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [await compiledEntry('src/main/admin.ts'), ...args],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          DATABASE_URL: testDatabaseUrl(),
          TEMPORAL_ADDRESS: temporal.address,
          TEMPORAL_NAMESPACE: temporal.namespace ?? 'default',
        },
        timeout: 30_000,
      },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** A refund case as its workflow leaves it: `awaiting_approval` once the policy was applied. */
async function refundCase(
  payoutId: string,
  status: 'open' | 'awaiting_approval' = 'awaiting_approval',
): Promise<string> {
  const opened = await openRefundCase(db, {
    eventId: `evt_${randomUUID().replace(/-/g, '').slice(0, 22)}`,
    payoutId,
    chargeId: 'chg_cli_refunds',
    amountBrl: '100.00',
    reason: 'payment received after the payout was FAILED',
    kind: 'payout_failed',
  });
  if (opened.outcome !== 'opened') throw new Error(`case not opened: ${opened.outcome}`);
  if (status === 'awaiting_approval')
    await moveRefundCase(db, opened.caseId, { from: ['open'], to: 'awaiting_approval' });
  return opened.caseId;
}

async function settledAfterEnd(payoutId: string): Promise<string> {
  const txHash = `0x${randomUUID().replace(/-/g, '')}${randomUUID().replace(/-/g, '')}`;
  await recordSettlementAfterEnd(db, {
    payoutId,
    txHash,
    amountUsdt: '17.152658',
    chainId: 42161,
    payoutStatus: 'FAILED',
    eventId: `evt_${randomUUID().slice(0, 12)}`,
  });
  return txHash;
}

describe('admin refunds approve', () => {
  it('refuses a case whose payout got a settlement report after its end, naming the transaction', async () => {
    const payoutId = randomUUID();
    const caseId = await refundCase(payoutId);
    const txHash = await settledAfterEnd(payoutId);
    const result = await cli(['refunds', 'approve', '--id', caseId, '--by', 'ana']);
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr:
        `error: refund case ${caseId} not approved: USDT may have left for payout ${payoutId}: ` +
        `17.152658 USDT sent in ${txHash} (chain 42161), reported by the provider after the payout was FAILED. ` +
        'No BRL goes back while the report is on record ' +
        '(docs/operations.md#settlement-reported-after-the-payout-ended)\n',
    });
    expect(await findRefundCase(db, caseId)).toMatchObject({ status: 'awaiting_approval', approvedBy: null });
  }, 60_000);

  it('refuses it whatever its status, and names every transaction reported', async () => {
    const payoutId = randomUUID();
    const caseId = await refundCase(payoutId, 'open');
    const first = await settledAfterEnd(payoutId);
    const second = await settledAfterEnd(payoutId);
    const result = await cli(['refunds', 'approve', '--id', caseId]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`refund case ${caseId} not approved`);
    expect(result.stderr).toContain(first);
    expect(result.stderr).toContain(second);
  }, 60_000);

  it('refuses a case whose payment settled its payout (opened by a run before a reset), naming the payout', async () => {
    const payoutId = randomUUID();
    const caseId = await refundCase(payoutId);
    const { eventId } = (await findRefundCase(db, caseId))!;
    const { partner } = await createPartner(db, 'cli refunds after reset');
    const completed = completedPayout({ id: payoutId, partnerId: partner.id, paymentEventId: eventId });
    await upsertPayout(db, completed, `payout-${payoutId}`, 'after-reset');
    const result = await cli(['refunds', 'approve', '--id', caseId, '--by', 'ana']);
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr:
        `error: refund case ${caseId} not approved: its payment settled payout ${payoutId} (COMPLETED), ` +
        'so the payer got the USDT: nothing to return (its workflow resolves the case)\n',
    });
    expect(await findRefundCase(db, caseId)).toMatchObject({ status: 'awaiting_approval', approvedBy: null });
  }, 60_000);

  it("refuses a case while its FAILED payout's workflow runs again (a reset): the payment may yet settle it", async () => {
    const payoutId = randomUUID();
    const caseId = await refundCase(payoutId);
    const { partner } = await createPartner(db, 'cli refunds during a reset');
    const workflowId = `payout-${payoutId}`;
    const failed = pendingPayout({
      id: payoutId,
      partnerId: partner.id,
      status: 'FAILED',
      failureReason: 'transfer_reverted',
    });
    await upsertPayout(db, failed, workflowId, 'before-reset');
    // The reset's new run, not yet ended (no worker polls this queue: it stays RUNNING).
    const running = await temporal.client.workflow.start('payoutWorkflow', {
      taskQueue: `nobody-${payoutId}`,
      workflowId,
      args: [],
    });
    try {
      const result = await cli(['refunds', 'approve', '--id', caseId, '--by', 'ana']);
      expect(result).toMatchObject({
        code: 1,
        stderr: expect.stringContaining(
          `refund case ${caseId} not approved: payout ${payoutId} is FAILED, but its workflow runs again`,
        ),
      });
    } finally {
      await running.terminate('test over');
    }
    // Ended, the case goes on to its own workflow (none runs for a case written by hand here).
    expect((await cli(['refunds', 'approve', '--id', caseId, '--by', 'ana'])).stderr).toBe(
      `error: refund case ${caseId} has no running workflow\n`,
    );
  }, 60_000);

  it("a report for another payout is not this case's: it goes on to the case's workflow", async () => {
    await settledAfterEnd(randomUUID());
    const caseId = await refundCase(randomUUID());
    const result = await cli(['refunds', 'approve', '--id', caseId, '--by', 'ana']);
    // No workflow runs for a case written by hand here: what the command says once past the report check.
    expect(result).toMatchObject({
      code: 1,
      stderr: `error: refund case ${caseId} has no running workflow\n`,
    });
  }, 60_000);
});
