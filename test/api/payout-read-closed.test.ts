import { toPayoutResponse, type PayoutRecord } from '../../src/domain/payout';
import { useStack, VALID_PAYOUT } from '../support/stack';
import { getPayout, post } from './helpers';
import { DEFAULT_NETWORK } from '../support/network';

// A payout that reached COMPLETED or FAILED never changes again: GET answers it from the read model
// the workflow wrote before closing, without querying (and so replaying) the closed workflow.
describe('GET /v1/payouts/{id} of a closed payout', () => {
  const stack = useStack();

  async function payAndWait(outcome: 'settled' | 'settlement_failed') {
    const { apiKey } = await stack.createPartner();
    const res = await post(stack.apiUrl, apiKey, VALID_PAYOUT);
    expect(res.status).toBe(201);
    const created = res.json as { id: string; pix_copy_paste: string };
    await stack.pay(created.pix_copy_paste, outcome);
    await stack.waitForStatus(apiKey, created.id, ['COMPLETED', 'FAILED']);
    const { rows } = await stack.db.query<{ workflow_id: string; run_id: string }>(
      'SELECT workflow_id, run_id FROM payouts WHERE id = $1',
      [created.id],
    );
    const handle = stack.temporal.workflow.getHandle(rows[0]!.workflow_id, rows[0]!.run_id);
    // The workflow's own final state: it has closed by now (its result is the payout it ended with).
    const final = await handle.result();
    return { apiKey, id: created.id, final: final as PayoutRecord };
  }

  it.each([
    ['COMPLETED', 'settled'],
    ['FAILED', 'settlement_failed'],
  ] as const)('%s: the read model holds the final state and answers alone', async (status, outcome) => {
    const { apiKey, id, final } = await payAndWait(outcome);
    expect(final.status).toBe(status);

    const before = await getPayout(stack.apiUrl, apiKey, id);
    expect(before.status).toBe(200);
    expect(before.json).toEqual(JSON.parse(JSON.stringify(toPayoutResponse(final, DEFAULT_NETWORK))));

    // A field no transition writes, changed in the read model only: the answer shows where it came
    // from. A query would answer the workflow's value.
    await stack.db.query(`UPDATE payouts SET pix_key = '99999999999' WHERE id = $1`, [id]);
    const after = await getPayout(stack.apiUrl, apiKey, id);
    expect(after.json).toEqual({ ...(before.json as object), pix_key: '99999999999' });
  });

  it('a live payout is still answered by its workflow', async () => {
    const { apiKey } = await stack.createPartner();
    const res = await post(stack.apiUrl, apiKey, VALID_PAYOUT);
    const created = res.json as { id: string };
    await stack.db.query(`UPDATE payouts SET pix_key = '99999999999' WHERE id = $1`, [created.id]);
    const read = await getPayout(stack.apiUrl, apiKey, created.id);
    expect(read.json).toMatchObject({ status: 'PENDING', pix_key: VALID_PAYOUT.pix_key });
  });
});
