import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { upsertPayout } from '../../src/adapters/db/payouts-repo';
import { getPayoutQuery, payoutWorkflowId } from '../../src/workflows/payout.contract';
import { completedPayout } from '../support/payouts';
import { useStack, VALID_PAYOUT } from '../support/stack';
import { until } from '../support/until';
import { getPayout, PAYOUT_KEYS, post } from './helpers';

// The Payout shape on the wire (docs/api.md "The Payout object") and GET /v1/payouts/{id}: answered by
// the workflow query, and by the PostgreSQL read model when the workflow cannot answer.
describe('Payout responses and GET /v1/payouts/{id}', () => {
  const stack = useStack();

  type Payout = Record<string, unknown> & { id: string; pix_copy_paste: string };
  const INTERNAL_KEYS = /"(partnerId|version|failure_?reason|provider_?charge_?id|workflow_?id|run_?id)"/i;

  /** No internal field, by name or by value (the values are read from the read model). */
  async function expectNoInternals(text: string, id: string): Promise<void> {
    expect(text).not.toMatch(INTERNAL_KEYS);
    const { rows } = await stack.db.query<{
      workflow_id: string;
      run_id: string;
      provider_charge_id: string | null;
    }>('SELECT workflow_id, run_id, provider_charge_id FROM payouts WHERE id = $1', [id]);
    const row = rows[0]!;
    for (const value of [row.workflow_id, row.run_id, row.provider_charge_id]) {
      if (value) expect(text).not.toContain(value);
    }
  }

  async function create(apiKey: string): Promise<Payout> {
    const res = await post(stack.apiUrl, apiKey, VALID_PAYOUT);
    expect(res.status).toBe(201);
    return res.json as Payout;
  }

  describe('shape', () => {
    it('a new payout has exactly the spec keys and the initial PENDING values of rule 2', async () => {
      const { partnerId, apiKey } = await stack.createPartner();
      const res = await post(stack.apiUrl, apiKey, VALID_PAYOUT);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const payout = res.json as Payout;
      expect(Object.keys(payout).sort()).toEqual(PAYOUT_KEYS);
      expect(payout).toEqual({
        id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
        partner_id: partnerId,
        status: 'PENDING',
        amount_brl: 100,
        min_amount_usdt: 17.152658,
        settled_amount_usdt: 0,
        pix_key: VALID_PAYOUT.pix_key,
        pix_key_type: 'CPF',
        receiver_wallet: VALID_PAYOUT.receiver_wallet,
        pix_copy_paste: expect.stringMatching(/^000201/),
        blockchain_network: '',
        blockchain_chain_id: 0,
        blockchain_tx_id: '',
        block_explorer_url: '',
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/),
        updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/),
      });
      await expectNoInternals(res.text, payout.id);
    });

    it('GET answers the same object as the create response', async () => {
      const { apiKey } = await stack.createPartner();
      const created = await create(apiKey);
      const read = await getPayout(stack.apiUrl, apiKey, created.id);
      expect(read.status).toBe(200);
      expect(read.headers.get('content-type')).toMatch(/^application\/json/);
      expect(read.json).toEqual(created);
      await expectNoInternals(read.text, created.id);
    });

    it('COMPLETED adds paid_at and confirmed_at and the settlement fields; nothing else', async () => {
      const { apiKey } = await stack.createPartner();
      const created = await create(apiKey);
      await stack.pay(created.pix_copy_paste);
      const done = await stack.waitForStatus(apiKey, created.id, ['COMPLETED', 'FAILED']);
      const res = await getPayout(stack.apiUrl, apiKey, created.id);
      expect(Object.keys(res.json as object).sort()).toEqual(
        [...PAYOUT_KEYS, 'confirmed_at', 'paid_at'].sort(),
      );
      expect(done).toMatchObject({
        status: 'COMPLETED',
        settled_amount_usdt: 17.825311,
        blockchain_network: 'Arbitrum One',
        blockchain_chain_id: 42161,
        blockchain_tx_id: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      });
      expect(done.block_explorer_url).toBe(`https://arbiscan.io/tx/${done.blockchain_tx_id}`);
      expect(Date.parse(done.paid_at!)).toBeLessThanOrEqual(Date.parse(done.confirmed_at!));
      await expectNoInternals(res.text, created.id);
    });

    it('FAILED keeps the initial empty settlement fields and no timestamps, even after a payment', async () => {
      const { apiKey } = await stack.createPartner();
      const created = await create(apiKey);
      await stack.pay(created.pix_copy_paste, 'settlement_failed');
      const failed = await stack.waitForStatus(apiKey, created.id, ['COMPLETED', 'FAILED']);
      expect(Object.keys(failed).sort()).toEqual(PAYOUT_KEYS);
      expect(failed).toMatchObject({
        status: 'FAILED',
        settled_amount_usdt: 0,
        blockchain_network: '',
        blockchain_chain_id: 0,
        blockchain_tx_id: '',
        block_explorer_url: '',
      });
      const raw = await getPayout(stack.apiUrl, apiKey, created.id);
      await expectNoInternals(raw.text, created.id);
    });
  });

  describe('where GET answers from', () => {
    // The read model row is made to differ from the workflow (a field no transition writes), so
    // the answer shows which of the two it came from.
    async function tamperReadModel(id: string): Promise<void> {
      await stack.db.query(`UPDATE payouts SET pix_key = '99999999999' WHERE id = $1`, [id]);
    }

    it('the workflow query, while the workflow answers', async () => {
      const { apiKey } = await stack.createPartner();
      const created = await create(apiKey);
      await tamperReadModel(created.id);
      const res = await getPayout(stack.apiUrl, apiKey, created.id);
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ pix_key: VALID_PAYOUT.pix_key });
    });

    it('the read model, for a payout whose workflow no longer exists (past retention)', async () => {
      const { apiKey } = await stack.createPartner();
      const created = await create(apiKey);
      const { rows } = await stack.db.query<{ workflow_id: string; run_id: string }>(
        'SELECT workflow_id, run_id FROM payouts WHERE id = $1',
        [created.id],
      );
      const execution = { workflowId: rows[0]!.workflow_id, runId: rows[0]!.run_id };
      await stack.temporal.workflowService.deleteWorkflowExecution({
        namespace: stack.testEnv.namespace ?? 'default',
        workflowExecution: execution,
      });
      // Deletion is asynchronous on the server.
      await until('the workflow deleted', () =>
        stack.temporal.workflow
          .getHandle(execution.workflowId, execution.runId)
          .describe()
          .then(
            () => undefined,
            (err: unknown) => {
              if (err instanceof WorkflowNotFoundError) return true;
              throw err;
            },
          ),
      );
      await tamperReadModel(created.id);

      const res = await getPayout(stack.apiUrl, apiKey, created.id);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ ...created, pix_key: '99999999999' });
    });

    it('the read model, for a row no workflow ever backed', async () => {
      const { partnerId, apiKey } = await stack.createPartner();
      const id = randomUUID();
      const record = completedPayout({
        id,
        partnerId,
        amountCentavos: '12345',
        minAmountUsdtUnits: '2117000',
        settledAmountUsdtUnits: '2200000',
        pixKey: 'payer@example.com',
        pixKeyType: 'EMAIL',
        pixCopyPaste: 'code',
        providerChargeId: 'chg_secret',
        paidAt: '2024-01-02T03:04:05.000Z',
        confirmedAt: '2024-01-02T03:05:06.000Z',
        createdAt: '2024-01-02T03:00:00.000Z',
        updatedAt: '2024-01-02T03:05:06.000Z',
        version: 5,
      });
      await upsertPayout(stack.db, record, `payout-${id}`, randomUUID());
      const res = await getPayout(stack.apiUrl, apiKey, id);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({
        id,
        partner_id: partnerId,
        status: 'COMPLETED',
        amount_brl: 123.45,
        min_amount_usdt: 2.117,
        settled_amount_usdt: 2.2,
        pix_key: 'payer@example.com',
        pix_key_type: 'EMAIL',
        receiver_wallet: VALID_PAYOUT.receiver_wallet,
        pix_copy_paste: 'code',
        blockchain_network: 'Arbitrum One',
        blockchain_chain_id: 42161,
        blockchain_tx_id: `0x${'ab'.repeat(32)}`,
        block_explorer_url: `https://arbiscan.io/tx/0x${'ab'.repeat(32)}`,
        paid_at: '2024-01-02T03:04:05.000Z',
        confirmed_at: '2024-01-02T03:05:06.000Z',
        created_at: '2024-01-02T03:00:00.000Z',
        updated_at: '2024-01-02T03:05:06.000Z',
      });
      await expectNoInternals(res.text, id);
    });

    it('the read model, when the workflow does not answer in time (no worker)', async () => {
      const { apiKey } = await stack.createPartner();
      const created = await create(apiKey);
      // POST answers before a worker has run the payout's first task (D81): run, before the worker goes.
      await until('the workflow to answer', () =>
        stack.temporal.workflow
          .getHandle(payoutWorkflowId(created.id))
          .query(getPayoutQuery)
          .catch(() => undefined),
      );
      await tamperReadModel(created.id);
      // The worker comes back only after the answer: a GET that waited for the workflow instead of
      // its query deadline would never answer (and the test would time out), whatever the clock says.
      // Back in `finally`, so no other test meets a stack without a worker, whatever the order.
      await stack.stopWorker();
      try {
        const res = await getPayout(stack.apiUrl, apiKey, created.id);
        expect(res.status).toBe(200);
        expect(res.json).toEqual({ ...created, pix_key: '99999999999' });
      } finally {
        await stack.startWorker();
      }
      // Back to the workflow once a worker answers again (its first queries may still meet the
      // stopped worker's sticky queue and fall back to the read model within their deadline).
      await until('GET to answer from the workflow again', async () => {
        const res = await getPayout(stack.apiUrl, apiKey, created.id);
        return (res.json as { pix_key?: string }).pix_key === VALID_PAYOUT.pix_key ? true : undefined;
      });
    });
  });
});
