import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  REFUND_HELD,
  type RefundActivities,
  type RefundStart,
  type ReturnProgress,
} from '../../src/activities/refund.activities';
import type { RefundCaseStatus } from '../../src/adapters/db/refund-cases-repo';
import {
  approveRefundUpdate,
  REFUND_NOT_AWAITING_APPROVAL,
  refundWorkflowId,
} from '../../src/workflows/refund.contract';
import { refundWorkflow } from '../../src/workflows/refund.workflow';
import { until } from '../support/until';
import { useTimeSkippingEnv, withWorker } from './harness';

// The refund workflow's decisions on the time-skipping server; its activities are stand-ins here
// (test/e2e/refund-returns.test.ts runs the real ones against PostgreSQL and the sandbox).

type Fake = { [K in keyof RefundActivities]?: (...args: Parameters<RefundActivities[K]>) => unknown };

function fakeRefund(over: Fake) {
  const calls: { name: string; args: unknown[] }[] = [];
  const impl: Required<Fake> = {
    beginRefund: async (): Promise<RefundStart> => 'return',
    approveRefund: async (): Promise<RefundCaseStatus> => 'returning',
    requestReturn: async (): Promise<ReturnProgress> => 'returning',
    checkReturn: async (): Promise<ReturnProgress> => 'returned',
    refundCaseStatus: async (): Promise<RefundCaseStatus> => 'awaiting_approval',
    ...over,
  } as Required<Fake>;
  const activities = Object.fromEntries(
    Object.entries(impl).map(([name, fn]) => [
      name,
      async (...args: unknown[]) => {
        calls.push({ name, args });
        return (fn as (...a: unknown[]) => unknown)(...args);
      },
    ]),
  );
  return { activities, callsOf: (name: keyof RefundActivities) => calls.filter((c) => c.name === name) };
}

describe('refundWorkflow', () => {
  const env = useTimeSkippingEnv();

  function start(taskQueue: string, caseId = randomUUID()) {
    return env.client.workflow.start(refundWorkflow, {
      workflowId: refundWorkflowId(caseId),
      taskQueue,
      args: [{ caseId }],
    });
  }

  test('a kind the policy returns: asked once, its status read with backoff until returned', async () => {
    const answers: ReturnProgress[] = ['returning', 'returning', 'returning', 'returned'];
    const fake = fakeRefund({ checkReturn: async () => answers.shift() ?? 'returned' });
    const caseId = randomUUID();
    const result = await withWorker(env, fake.activities, async (tq) => (await start(tq, caseId)).result());
    expect(result).toBe('returned');
    expect(fake.callsOf('requestReturn')).toEqual([{ name: 'requestReturn', args: [caseId] }]);
    expect(fake.callsOf('checkReturn')).toHaveLength(4);
    expect(fake.callsOf('approveRefund')).toHaveLength(0);
  });

  test('a status that cannot be read is asked again, never taken for refused', async () => {
    let failures = 3;
    const fake = fakeRefund({
      checkReturn: async () => {
        if (failures-- > 0)
          throw ApplicationFailure.retryable('provider getReturn: HTTP 503', 'ProviderUnavailable');
        return 'returned';
      },
    });
    const result = await withWorker(env, fake.activities, async (tq) => (await start(tq)).result());
    expect(result).toBe('returned');
    expect(fake.callsOf('checkReturn')).toHaveLength(4);
  });

  test("the provider's refusal ends it refused", async () => {
    const fake = fakeRefund({ checkReturn: async () => 'refused' });
    const result = await withWorker(env, fake.activities, async (tq) => (await start(tq)).result());
    expect(result).toBe('refused');
  });

  test('a kind that waits: nothing is returned until approved; the approval is recorded, then returned', async () => {
    const fake = fakeRefund({ beginRefund: async () => 'awaiting_approval' });
    const caseId = randomUUID();
    const result = await withWorker(env, fake.activities, async (tq) => {
      const handle = await start(tq, caseId);
      await until('the policy applied', async () => fake.callsOf('beginRefund').length > 0 || undefined);
      expect(fake.callsOf('requestReturn')).toHaveLength(0);
      const answer = await handle.executeUpdate(approveRefundUpdate, {
        args: [{ by: 'ana' }],
        updateId: `approve-${caseId}`,
      });
      expect(answer).toBe('returning');
      return handle.result();
    });
    expect(result).toBe('returned');
    expect(fake.callsOf('approveRefund')).toEqual([{ name: 'approveRefund', args: [{ caseId, by: 'ana' }] }]);
    expect(fake.callsOf('requestReturn')).toHaveLength(1);
  });

  test('an approval of a case that does not wait for one is refused', async () => {
    const fake = fakeRefund({ checkReturn: async () => 'returning' });
    await withWorker(env, fake.activities, async (tq) => {
      const handle = await start(tq);
      await until('the return requested', async () => fake.callsOf('requestReturn').length > 0 || undefined);
      const err = await handle.executeUpdate(approveRefundUpdate, { args: [{ by: 'ana' }] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(((err as WorkflowUpdateFailedError).cause as ApplicationFailure).type).toBe(
        REFUND_NOT_AWAITING_APPROVAL,
      );
      await handle.terminate('test over');
    });
  });

  test('a case resolved by hand while it waits for approval ends its workflow without a return', async () => {
    let status: RefundCaseStatus = 'awaiting_approval';
    const fake = fakeRefund({
      beginRefund: async () => 'awaiting_approval',
      refundCaseStatus: async () => status,
    });
    const result = await withWorker(env, fake.activities, async (tq) => {
      const handle = await start(tq);
      await until('the policy applied', async () => fake.callsOf('beginRefund').length > 0 || undefined);
      status = 'resolved';
      return handle.result();
    });
    expect(result).toBe('resolved_by_hand');
    expect(fake.callsOf('requestReturn')).toHaveLength(0);
  });

  test('a held return (its payout got a settlement report after the end) waits in its step until resolved by hand', async () => {
    let held = 3;
    const fake = fakeRefund({
      requestReturn: async () => {
        if (held-- > 0)
          throw ApplicationFailure.retryable('refund case held: USDT may have left', REFUND_HELD);
        return 'resolved';
      },
    });
    const result = await withWorker(env, fake.activities, async (tq) => (await start(tq)).result());
    expect(result).toBe('resolved_by_hand');
    expect(fake.callsOf('requestReturn')).toHaveLength(4);
    expect(fake.callsOf('checkReturn')).toHaveLength(0);
  });

  test('a provider without returns leaves the case to an operator', async () => {
    const fake = fakeRefund({ beginRefund: async () => 'left_to_operator' });
    const result = await withWorker(env, fake.activities, async (tq) => (await start(tq)).result());
    expect(result).toBe('left_to_operator');
    expect(fake.callsOf('requestReturn')).toHaveLength(0);
  });
});
