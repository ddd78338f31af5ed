import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { PayoutResponse } from '../../src/domain/payout';
import { useStack } from '../support/stack';
import { compiledEntry } from '../support/compiled';
import type { ServiceProcess } from '../support/service-process';
import { until } from '../support/until';

// Refunds returned through the provider on real servers (dev server, PostgreSQL, anvil, sandbox, the
// worker as its own process, api), with the default policy (REFUND_AUTO_RETURN_KINDS unset): a wrong
// amount, a second payment and a payment after expiry each end `returned`, the sandbox's payer getting
// each back exactly once; and a worker killed after the provider accepted a return, before the return
// was recorded, returns the money once (docs/decisions.md D62).
describe('refunds returned by the provider (real servers)', () => {
  const stack = useStack({ env: { PIX_CHARGE_EXPIRY_SECONDS: '60' }, proxyProvider: true, worker: false });
  let apiKey: string;
  let worker: ServiceProcess;
  let expiring: PayoutResponse;
  let removal: { arrived: Promise<void>; release(): void };

  beforeAll(async () => {
    ({ apiKey } = await stack.createPartner());
    worker = await stack.startProcess('worker');
    // Its charge expires while the tests before the last run. At expiry the service removes the charge; that
    // removal is held, so the payer can still pay the expired charge, as a bank would before it.
    removal = stack.providerProxy!.hold('PATCH /pix/charges');
    expiring = (await stack.createPayout(apiKey)).payout;
  }, 120_000);

  interface CaseRow {
    id: string;
    event_id: string;
    kind: string;
    status: string;
    return_id: string | null;
  }
  const caseOf = async (eventId: string): Promise<CaseRow | undefined> =>
    (
      await stack.db.query<CaseRow>(
        'SELECT id, event_id, kind, status, return_id FROM refund_cases WHERE event_id = $1',
        [eventId],
      )
    ).rows[0];

  /** Polls PostgreSQL until the payment's refund case is in `status`. */
  const untilCase = (eventId: string, status: string, timeoutMs = 60_000): Promise<CaseRow> => {
    let last: CaseRow | undefined;
    return until(
      () => `the refund case of ${eventId} to be ${status} (last: ${JSON.stringify(last)})`,
      async () => {
        last = await caseOf(eventId);
        return last?.status === status ? last : undefined;
      },
      { timeoutMs, intervalMs: 200 },
    );
  };

  /** The sandbox's record of money back in payers' accounts, for this payment. */
  const returnsOf = async (eventId: string) => {
    const res = await fetch(`${stack.sandboxUrl}/sandbox/returns`);
    const body = (await res.json()) as {
      returns: { end_to_end_id: string; devolucao_id: string; valor: string }[];
    };
    return body.returns.filter((r) => r.end_to_end_id === eventId);
  };

  const changesOf = async (caseId: string) =>
    (
      await stack.db.query<{ status: string }>(
        'SELECT status FROM refund_case_changes WHERE case_id = $1 ORDER BY changed_at',
        [caseId],
      )
    ).rows.map((r) => r.status);

  it('a wrong amount and a second payment of a charge are returned to the payer, once each', async () => {
    const { payout } = await stack.createPayout(apiKey);
    const wrong = await stack.payWith(payout.pix_copy_paste, { amountBrl: 1 });
    const wrongCase = await untilCase(wrong, 'returned');
    expect(wrongCase).toMatchObject({ kind: 'wrong_amount', return_id: expect.stringMatching(/^rtn_/) });

    // Paid twice at once: whichever payment reaches the payout first settles it (their webhooks race),
    // the other is the second payment, returned.
    const both = [
      await stack.payWith(payout.pix_copy_paste, {}),
      await stack.payWith(payout.pix_copy_paste, {}),
    ];
    expect((await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED'])).status).toBe('COMPLETED');
    const { rows: settled } = await stack.db.query<{ payment_event_id: string }>(
      'SELECT payment_event_id FROM payouts WHERE id = $1',
      [payout.id],
    );
    expect(both).toContain(settled[0]!.payment_event_id);
    const again = both.find((id) => id !== settled[0]!.payment_event_id)!;
    const secondCase = await untilCase(again, 'returned');
    expect(secondCase.kind).toBe('second_payment');

    expect(await returnsOf(wrong)).toEqual([
      expect.objectContaining({ devolucao_id: wrongCase.id, valor: '1.00' }),
    ]);
    expect(await returnsOf(again)).toEqual([
      expect.objectContaining({ devolucao_id: secondCase.id, valor: '100.00' }),
    ]);
    expect(await changesOf(wrongCase.id)).toEqual(['open', 'returning', 'returned']);
  }, 120_000);

  /** The admin CLI as an operator runs it, on this stack. */
  async function admin(...args: string[]): Promise<Record<string, unknown>> {
    const root = path.resolve(__dirname, '../..');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [await compiledEntry('src/main/admin.ts'), ...args],
      {
        cwd: root,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, ...stack.serviceEnv },
        timeout: 60_000,
      },
    );
    return JSON.parse(stdout) as Record<string, unknown>;
  }

  it('a paid payout that failed waits for approval; `admin refunds approve` returns it, once', async () => {
    const { payout } = await stack.createPayout(apiKey);
    const paid = await stack.payWith(payout.pix_copy_paste, { outcome: 'settlement_failed' });
    expect((await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED'])).status).toBe('FAILED');
    const waiting = await untilCase(paid, 'awaiting_approval');
    expect(waiting.kind).toBe('payout_failed');
    expect(await returnsOf(paid)).toEqual([]);

    const approved = await admin('refunds', 'approve', '--id', waiting.id, '--by', 'ana');
    expect(approved).toMatchObject({ id: waiting.id, status: 'returning', approved_by: 'ana' });
    await untilCase(paid, 'returned');
    expect(await returnsOf(paid)).toHaveLength(1);
    // Approving again is harmless: the same case, no second return.
    expect(await admin('refunds', 'approve', '--id', waiting.id, '--by', 'ana')).toMatchObject({
      id: waiting.id,
    });

    const listed = (await admin('refunds', 'list', '--all')) as {
      refund_cases: {
        id: string;
        status: string;
        return_id: string;
        changes: { status: string; at: string }[];
      }[];
    };
    const shown = listed.refund_cases.find((c) => c.id === waiting.id);
    expect(shown).toMatchObject({ status: 'returned', return_id: expect.stringMatching(/^rtn_/) });
    expect(shown!.changes.map((c) => c.status)).toEqual([
      'open',
      'awaiting_approval',
      'returning',
      'returned',
    ]);
    expect(await returnsOf(paid)).toHaveLength(1);
  }, 120_000);

  // Before the expired charge's case: the worker is killed and replaced while that payout only waits
  // on its expiry timer (its charge's removal is held until that case pays it).
  it('a worker killed after the return was requested, before it was recorded, returns the money once', async () => {
    const { payout } = await stack.createPayout(apiKey);
    const requestsBefore = stack.providerProxy!.requests().get('POST /pix/returns') ?? 0;
    const held = stack.providerProxy!.hold('POST /pix/returns');
    const wrong = await stack.payWith(payout.pix_copy_paste, { amountBrl: 2 });
    await held.arrived;
    // The worker dies while its call to the provider is in flight; the provider then acts on it and
    // its answer reaches no one.
    await worker.kill('SIGKILL');
    held.release();
    await until(
      'the provider to return the payment',
      async () => ((await returnsOf(wrong)).length > 0 ? true : undefined),
      {
        timeoutMs: 30_000,
      },
    );
    // Nothing of the provider's answer was recorded: the case was claimed, its return is unknown to us.
    expect(await caseOf(wrong)).toMatchObject({ status: 'returning', return_id: null });

    worker = await stack.startProcess('worker');
    const ended = await untilCase(wrong, 'returned', 90_000);
    // The redone activity asked again under the same refund id and got the same return.
    expect(stack.providerProxy!.requests().get('POST /pix/returns')).toBeGreaterThanOrEqual(
      requestsBefore + 2,
    );
    const returned = await returnsOf(wrong);
    expect(returned).toEqual([expect.objectContaining({ devolucao_id: ended.id, valor: '2.00' })]);
    expect(returned[0]).toMatchObject({ rtr_id: ended.return_id });
  }, 180_000);

  // Last: the cases above run while the charge of beforeAll waits for its expiry.
  it('a payment after the charge expired is returned to the payer, once', async () => {
    await removal.arrived;
    const late = await stack.payWith(expiring.pix_copy_paste, {});
    removal.release();
    expect((await stack.waitForStatus(apiKey, expiring.id, ['FAILED', 'COMPLETED'], 60_000)).status).toBe(
      'FAILED',
    );
    const lateCase = await untilCase(late, 'returned');
    expect(lateCase.kind).toBe('late_payment');
    expect(await returnsOf(late)).toHaveLength(1);
  }, 180_000);
});
