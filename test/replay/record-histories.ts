/**
 * Records replay fixtures in ./histories: `npx tsx test/replay/record-histories.ts [label]`.
 * The fixtures without a label are the baseline: histories of the code as first released.
 *
 * With a label (say, the patch id of a change just shipped) it adds `<name>.<label>.json` next to
 * the fixtures already there, so the histories of every generation of the code keep replaying
 * against the code as it is now. Without one it overwrites the original fixtures, which is only
 * right when a change is MEANT to be incompatible with running workflows (a new workflow type):
 * the point of the fixtures is that they were recorded by older code. Each one is a full run on the
 * time-skipping test server with stand-in activities.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { format } from 'prettier';
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { PayoutLocation } from '../../src/adapters/db/payouts-repo';
import type { ProviderEvent } from '../../src/domain/provider-event';
import {
  payoutWorkflowId,
  providerEventSignal,
  type PayoutSettings,
  type PayoutWorkflowInput,
} from '../../src/workflows/payout.contract';
import { providerEventWorkflowId } from '../../src/workflows/provider-event.contract';
import { payoutWorkflow } from '../../src/workflows/payout.workflow';
import { providerEventWorkflow } from '../../src/workflows/provider-event.workflow';
import { approveRefundUpdate, refundWorkflowId } from '../../src/workflows/refund.contract';
import { refundWorkflow } from '../../src/workflows/refund.workflow';
import { createTimeSkippingEnv } from '../support/temporal';
import { historyToObject } from './history-json';
import {
  endChildren,
  fakeActivities,
  notYet,
  payoutInput,
  pixReceived,
  settlementCompleted,
  settlementFailed,
  statusNamingTx,
  treasuryBlocked,
  TREASURY_TX_HASH,
  TX_HASH,
  waitForPayout,
  withWorker,
} from '../workflow/harness';

const DIR = path.join(__dirname, 'histories');
const LABEL = process.argv[2] ? `.${process.argv[2]}` : '';
/** RECORD_ONLY=name,name: writes only these fixtures (a scenario added to the baseline), the rest untouched. */
const ONLY = process.env.RECORD_ONLY ? new Set(process.env.RECORD_ONLY.split(',')) : undefined;

async function save(
  env: TestWorkflowEnvironment,
  name: string,
  workflowId: string,
  runId?: string,
): Promise<void> {
  if (ONLY && !ONLY.has(name)) return;
  const history = await env.client.workflow.getHandle(workflowId, runId).fetchHistory();
  const json = await format(JSON.stringify(historyToObject(history)), { parser: 'json' });
  writeFileSync(path.join(DIR, `${name}${LABEL}.json`), json);
  console.log(`recorded ${name} (${history.events?.length ?? 0} events)`);
}

async function payout(
  env: TestWorkflowEnvironment,
  name: string,
  settings: Partial<PayoutSettings>,
  fake: ReturnType<typeof fakeActivities>,
  events: (payoutId: string) => ProviderEvent[],
  inputOver: Partial<PayoutWorkflowInput> = {},
): Promise<void> {
  await withWorker(
    env,
    fake.activities,
    async (taskQueue) => {
      const input = { ...payoutInput(settings), ...inputOver };
      const handle = await env.client.workflow.start(payoutWorkflow, {
        workflowId: payoutWorkflowId(input.payoutId),
        taskQueue,
        args: [input],
      });
      await waitForPayout(handle, (p) => p.pixCopyPaste !== '');
      for (const event of events(input.payoutId)) await handle.signal(providerEventSignal, event);
      await env.client.workflow.getHandle(handle.workflowId).result();
      await endChildren(env, handle.workflowId);
      await save(env, name, handle.workflowId);
      // A payout that handed over (continue-as-new): its first run too, ending in the hand-over.
      const last = await env.client.workflow.getHandle(handle.workflowId).describe();
      if (last.runId !== handle.firstExecutionRunId) {
        await save(env, `${name}-first-run`, handle.workflowId, handle.firstExecutionRunId);
      }
    },
    { children: true },
  );
}

/** A stand-in step that fails (or answers `waiting`) for `days` of workflow time from its first call, then answers `done`. */
function forDays<T>(
  env: TestWorkflowEnvironment,
  days: number,
  waiting: () => T,
  done: () => T,
): () => Promise<T> {
  let since: number | undefined;
  return async () => {
    const now = await env.currentTimeMs();
    since ??= now;
    return now - since < days * 86_400_000 ? waiting() : done();
  };
}

async function main(): Promise<void> {
  const env = await createTimeSkippingEnv();
  try {
    // Started with the charge the api created (D81): no charge activity, its charge from the input.
    const apiCharge = {
      chargeId: 'chg_api000000000000000000',
      pixCopyPaste: '000201...api...6304BEEF',
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    };
    await payout(
      env,
      'payout-api-charge-completed',
      {},
      fakeActivities(),
      (id) => [
        pixReceived(id, { chargeId: apiCharge.chargeId }),
        settlementCompleted(id, { chargeId: apiCharge.chargeId }),
      ],
      { charge: apiCharge },
    );
    await payout(env, 'payout-provider-completed', {}, fakeActivities(), (id) => [
      pixReceived(id),
      pixReceived(id), // a second payment: recorded for refund
      settlementCompleted(id),
    ]);
    const nothingSent = fakeActivities({
      fetchSettlementStatus: async () => ({
        status: 'failed' as const,
        chainId: 42161,
        failureReason: 'no liquidity',
      }),
    });
    await payout(env, 'payout-provider-failed', {}, nothingSent, (id) => [
      pixReceived(id),
      settlementFailed(id),
    ]);
    // No webhook after the settlement request: the status is read until it names a transfer.
    let reads = 0;
    const quietProvider = fakeActivities({
      fetchSettlementStatus: async () =>
        ++reads < 3
          ? { status: 'broadcast' as const, chainId: 42161 }
          : { status: 'completed' as const, chainId: 42161, txHash: TX_HASH, amountUsdt: '17.825311' },
    });
    await payout(
      env,
      'payout-provider-status-completed',
      { settlementTimeoutSeconds: 60 },
      quietProvider,
      (id) => [pixReceived(id)],
    );
    await payout(env, 'payout-charge-expired', {}, fakeActivities(), () => []);
    let overdue = false;
    const slowTreasury = fakeActivities({
      alertSettlementOverdue: async () => {
        overdue = true;
      },
      confirmTreasuryTransfer: async () => {
        if (!overdue) throw notYet();
        return { status: 'confirmed' as const, txHash: TREASURY_TX_HASH };
      },
    });
    await payout(
      env,
      'payout-treasury-overdue-completed',
      { settlementMode: 'treasury', settlementTimeoutSeconds: 600 },
      slowTreasury,
      (id) => [pixReceived(id)],
    );

    // Treasury health: the send refused a round for a blocked treasury (its attention item raised),
    // then the transfer mined and reverted by the treasury, sent again in a new round, confirmed.
    let sends = 0;
    let reverted = false;
    const blockedTreasury = fakeActivities({
      sendTreasuryTransfer: async () => {
        // More attempts than a 5-minute round holds: the first round ends refused.
        if (++sends <= 15) {
          throw treasuryBlocked();
        }
        return { txHash: TREASURY_TX_HASH };
      },
      confirmTreasuryTransfer: async () => {
        if (reverted) return { status: 'confirmed' as const, txHash: TREASURY_TX_HASH };
        reverted = true;
        return { status: 'reverted_by_sender' as const, txHash: TREASURY_TX_HASH };
      },
    });
    await payout(
      env,
      'payout-treasury-blocked-completed',
      { settlementMode: 'treasury' },
      blockedTreasury,
      (id) => [pixReceived(id)],
    );

    // The long waits (a bounded history): a treasury blocked by its issuer for hours of rounds.
    let blockedSends = 0;
    const longBlockedTreasury = fakeActivities({
      sendTreasuryTransfer: async () => {
        if (++blockedSends <= 400) {
          throw treasuryBlocked();
        }
        return { txHash: TREASURY_TX_HASH };
      },
    });
    await payout(
      env,
      'payout-treasury-blocked-long',
      { settlementMode: 'treasury' },
      longBlockedTreasury,
      (id) => [pixReceived(id)],
    );
    // The provider's transfer mined without the payment to the receiver, looked at for hours.
    let mismatchLooks = 0;
    const mismatched = fakeActivities({
      verifyUsdtTransfer: async () => (++mismatchLooks <= 60 ? 'mismatch' : 'confirmed'),
    });
    await payout(env, 'payout-provider-mismatch-long', {}, mismatched, (id) => [
      pixReceived(id),
      settlementCompleted(id),
    ]);

    // 60-day waits (patch bounded-long-waits): each hands over to new runs; the first run and the last are kept.
    const blocked60 = fakeActivities({
      sendTreasuryTransfer: forDays(
        env,
        60,
        () => {
          throw treasuryBlocked();
        },
        () => ({ txHash: TREASURY_TX_HASH }),
      ),
    });
    await payout(env, 'payout-treasury-blocked-60-days', { settlementMode: 'treasury' }, blocked60, (id) => [
      pixReceived(id),
    ]);
    const mismatch60 = fakeActivities({
      fetchSettlementStatus: statusNamingTx,
      verifyUsdtTransfer: forDays(
        env,
        60,
        () => 'mismatch' as const,
        () => 'confirmed' as const,
      ),
    });
    await payout(env, 'payout-provider-mismatch-60-days', {}, mismatch60, (id) => [
      pixReceived(id),
      settlementCompleted(id),
    ]);

    // A provider event for a payout that has already ended: the late-payment branch.
    let location: PayoutLocation | null = null;
    let event: ProviderEvent | null = null;
    const fake = fakeActivities({
      createPixCharge: async () => {
        throw ApplicationFailure.nonRetryable('refused', 'ProviderRejected');
      },
      fetchProviderEvent: async () => event,
      findPayoutWorkflow: async () => location,
    });
    await withWorker(
      env,
      fake.activities,
      async (taskQueue) => {
        const input = payoutInput();
        const handle = await env.client.workflow.start(payoutWorkflow, {
          workflowId: payoutWorkflowId(input.payoutId),
          taskQueue,
          args: [input],
        });
        await handle.result();
        await endChildren(env, handle.workflowId);
        location = {
          payoutId: input.payoutId,
          workflowId: handle.workflowId,
          runId: handle.firstExecutionRunId,
          status: 'FAILED',
        };
        event = pixReceived(input.payoutId);
        const token = randomUUID();
        const workflowId = providerEventWorkflowId('sandbox', token);
        await env.client.workflow.execute(providerEventWorkflow, {
          workflowId,
          taskQueue,
          args: [{ provider: 'sandbox', token }],
        });
        await endChildren(env, workflowId);
        await save(env, 'provider-event-late-payment', workflowId);
      },
      { children: true },
    );

    // A refund case of a kind the policy returns: asked, read once more, returned.
    let returnReads = 0;
    const returning = fakeActivities({
      checkReturn: async () => (++returnReads < 2 ? 'returning' : 'returned'),
    });
    await withWorker(env, returning.activities, async (taskQueue) => {
      const caseId = randomUUID();
      const handle = await env.client.workflow.start(refundWorkflow, {
        workflowId: refundWorkflowId(caseId),
        taskQueue,
        args: [{ caseId }],
      });
      await handle.result();
      await save(env, 'refund-returned', handle.workflowId);
    });

    // A return the provider keeps `returning` for hours.
    let longReads = 0;
    const longReturning = fakeActivities({
      checkReturn: async () => (++longReads <= 120 ? 'returning' : 'returned'),
    });
    await withWorker(env, longReturning.activities, async (taskQueue) => {
      const caseId = randomUUID();
      const handle = await env.client.workflow.start(refundWorkflow, {
        workflowId: refundWorkflowId(caseId),
        taskQueue,
        args: [{ caseId }],
      });
      await handle.result();
      await save(env, 'refund-returning-long', handle.workflowId);
    });

    // A return `returning` for 60 days: handed over to new runs; the first run and the last are kept.
    const returning60 = fakeActivities({
      checkReturn: forDays(
        env,
        60,
        () => 'returning' as const,
        () => 'returned' as const,
      ),
    });
    await withWorker(env, returning60.activities, async (taskQueue) => {
      const caseId = randomUUID();
      const handle = await env.client.workflow.start(refundWorkflow, {
        workflowId: refundWorkflowId(caseId),
        taskQueue,
        args: [{ caseId }],
      });
      await env.client.workflow.getHandle(handle.workflowId).result();
      await save(env, 'refund-returning-60-days', handle.workflowId);
      await save(env, 'refund-returning-60-days-first-run', handle.workflowId, handle.firstExecutionRunId);
    });

    // A refund case that waits for an operator's approval, then returns.
    let begun = false;
    const waiting = fakeActivities({
      beginRefund: async () => {
        begun = true;
        return 'awaiting_approval' as const;
      },
    });
    await withWorker(env, waiting.activities, async (taskQueue) => {
      const caseId = randomUUID();
      const handle = await env.client.workflow.start(refundWorkflow, {
        workflowId: refundWorkflowId(caseId),
        taskQueue,
        args: [{ caseId }],
      });
      while (!begun) await new Promise((resolve) => setTimeout(resolve, 20));
      await handle.executeUpdate(approveRefundUpdate, {
        args: [{ by: 'ops' }],
        updateId: `approve-${caseId}`,
      });
      await handle.result();
      await save(env, 'refund-approved', handle.workflowId);
    });
  } finally {
    await env.teardown();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
