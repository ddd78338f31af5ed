import { createHttpProvider } from '../../src/adapters/provider/http-provider';
import { createSecretBox } from '../../src/adapters/secrets/secret-box';
import { generateCallbackSecret } from '../../src/adapters/callbacks/signature';
import { setPartnerCallback } from '../../src/adapters/db/partners-repo';
import { startReceiver, type Receiver } from '../callbacks/receiver';
import { useStack, VALID_PAYOUT } from '../support/stack';
import { until } from '../support/until';
import { call, expectError, post, type ApiResponse } from './helpers';
import { payloadKeysOf } from '../../src/main/wiring';

// POST /v1/payouts/{id}/cancel on the real stack (api, worker, Temporal, PostgreSQL, sandbox over
// HTTP): the workflow decides between the cancel and the payment, the sandbox removes the charge.

type Payout = { id: string; status: string; pix_copy_paste: string };

describe('POST /v1/payouts/{id}/cancel', () => {
  const stack = useStack({ env: { CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' } });
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(() => receiver?.close());

  const cancel = (apiKey: string, id: string, headers: Record<string, string> = {}): Promise<ApiResponse> =>
    call(stack.apiUrl, `/v1/payouts/${id}/cancel`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey, ...headers },
    });

  async function createPayout(): Promise<{ apiKey: string; payout: Payout }> {
    const { apiKey } = await stack.createPartner();
    const created = await post(stack.apiUrl, apiKey, JSON.stringify(VALID_PAYOUT));
    expect(created.status).toBe(201);
    return { apiKey, payout: created.json as Payout };
  }

  /** Pays the BR Code at the sandbox; its HTTP status (202 accepted, 410 removed charge). */
  async function payAtSandbox(pixCopyPaste: string, notify = true): Promise<number> {
    const res = await fetch(`${stack.sandboxUrl}/sandbox/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pix_copy_paste: pixCopyPaste, outcome: 'settled', notify }),
    });
    await res.text();
    return res.status;
  }

  it('a PENDING payout: 200 FAILED as GET shows it, and the sandbox refuses its payment after', async () => {
    const { apiKey, payout } = await createPayout();
    const res = await cancel(apiKey, payout.id);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: payout.id, status: 'FAILED' });
    const read = await call(stack.apiUrl, `/v1/payouts/${payout.id}`, { headers: { 'x-api-key': apiKey } });
    expect(read.json).toEqual(res.json);
    const { rows } = await stack.db.query<{ failure_reason: string }>(
      'SELECT failure_reason FROM payouts WHERE id = $1',
      [payout.id],
    );
    expect(rows[0]?.failure_reason).toBe('cancelled');
    expect(await payAtSandbox(payout.pix_copy_paste)).toBe(410);
    // The real provider client reads the charge back: removed, never paid.
    const provider = createHttpProvider({ baseUrl: stack.sandboxUrl, apiKey: stack.config.PROVIDER_API_KEY });
    const charge = await provider.getChargeStatus((await chargeIdOf(payout.id))!);
    expect(charge).toMatchObject({ status: 'removed', payments: [] });
  });

  it('a payment the provider saw first (its webhook lost): 409 being processed, and the payout settles', async () => {
    const { apiKey, payout } = await createPayout();
    expect(await payAtSandbox(payout.pix_copy_paste, false)).toBe(202);
    expectError(await cancel(apiKey, payout.id), 409, 'payout is already being processed');
    expect((await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED'], 60_000)).status).toBe(
      'COMPLETED',
    );
  }, 90_000);

  it('a payment applied before: 409 being processed; once final: 409 naming its status', async () => {
    const { apiKey, payout } = await createPayout();
    await stack.pay(payout.pix_copy_paste);
    await stack.waitForStatus(apiKey, payout.id, ['PROCESSING', 'COMPLETED']);
    const early = await cancel(apiKey, payout.id);
    expect(early.status).toBe(409);
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED'], 60_000);
    expect(done.status).toBe('COMPLETED');
    expectError(await cancel(apiKey, payout.id), 409, 'payout is already COMPLETED');
  }, 90_000);

  it("another partner's payout, an unknown or malformed id: 404 payout not found", async () => {
    const { payout } = await createPayout();
    const other = await stack.createPartner();
    expectError(await cancel(other.apiKey, payout.id), 404, 'payout not found');
    expectError(await cancel(other.apiKey, '00000000-0000-4000-8000-000000000000'), 404, 'payout not found');
    expectError(await cancel(other.apiKey, 'nope'), 404, 'payout not found');
  });

  it('Idempotency-Key: a repeat answers the same 200 payout; without the key a repeat is 409', async () => {
    const { apiKey, payout } = await createPayout();
    const first = await cancel(apiKey, payout.id, { 'idempotency-key': 'cancel-1' });
    expect(first.status).toBe(200);
    const again = await cancel(apiKey, payout.id, { 'idempotency-key': 'cancel-1' });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json).toEqual(first.json);
    expectError(await cancel(apiKey, payout.id), 409, 'payout is already FAILED');
  });

  it('requires the API key', async () => {
    const { payout } = await createPayout();
    const res = await call(stack.apiUrl, `/v1/payouts/${payout.id}/cancel`, { method: 'POST' });
    expectError(res, 401, 'missing X-API-Key header');
  });

  it('the partner is called back with payout.failed and the cancelled payout as GET shows it', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    await setPartnerCallback(
      stack.db,
      partnerId,
      { url: receiver.url, secret: generateCallbackSecret() },
      createSecretBox(payloadKeysOf(stack.config)),
    );
    const created = await post(stack.apiUrl, apiKey, JSON.stringify(VALID_PAYOUT));
    const payout = created.json as Payout;
    const cancelled = await cancel(apiKey, payout.id);
    expect(cancelled.status).toBe(200);
    const [got] = await receiver.waitFor(
      1,
      (r) => (JSON.parse(r.rawBody.toString('utf8')) as { payout: { id: string } }).payout.id === payout.id,
    );
    expect(JSON.parse(got!.rawBody.toString('utf8'))).toEqual({
      event: 'payout.failed',
      payout: cancelled.json,
    });
  });

  it('after a wrong-amount payment: 200 FAILED cancelled, the charge removed, the payment in its refund case', async () => {
    const { apiKey, payout } = await createPayout();
    const wrongEventId = await stack.payWith(payout.pix_copy_paste, { amountBrl: 50 });
    // The workflow has judged it (its webhook came): a refund case, the payout still PENDING.
    await refundCaseFor(wrongEventId);
    const res = await cancel(apiKey, payout.id);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: payout.id, status: 'FAILED' });
    const { rows } = await stack.db.query<{ failure_reason: string }>(
      'SELECT failure_reason FROM payouts WHERE id = $1',
      [payout.id],
    );
    expect(rows[0]?.failure_reason).toBe('cancelled');
    // Its status is the refund workflow's (test/e2e/refund-returns.test.ts).
    expect(await refundCaseFor(wrongEventId)).toMatchObject({ payout_id: payout.id, amount_brl: '50.00' });
    expect(await payAtSandbox(payout.pix_copy_paste)).toBe(410);
  }, 60_000);

  it("another partner's cancel leaves the owner's payout PENDING and its charge payable", async () => {
    const { apiKey, payout } = await createPayout();
    const other = await stack.createPartner();
    expectError(await cancel(other.apiKey, payout.id), 404, 'payout not found');
    const read = await call(stack.apiUrl, `/v1/payouts/${payout.id}`, { headers: { 'x-api-key': apiKey } });
    expect(read.json).toMatchObject({
      id: payout.id,
      status: 'PENDING',
      pix_copy_paste: payout.pix_copy_paste,
    });
    const provider = createHttpProvider({ baseUrl: stack.sandboxUrl, apiKey: stack.config.PROVIDER_API_KEY });
    expect(await provider.getChargeStatus((await chargeIdOf(payout.id))!)).toMatchObject({
      status: 'active',
      payments: [],
    });
  });

  // The read model says PENDING but Temporal cannot decide: 503, retry later, and nothing changed.
  it('a PENDING payout whose workflow is gone (terminated): 503, the payout untouched', async () => {
    const { apiKey, payout } = await createPayout();
    const { rows } = await stack.db.query<{ workflow_id: string }>(
      'SELECT workflow_id FROM payouts WHERE id = $1',
      [payout.id],
    );
    await stack.temporal.workflow.getHandle(rows[0]!.workflow_id).terminate('test: workflow gone');
    expectError(await cancel(apiKey, payout.id), 503, 'payment provider unavailable, retry later');
    const read = await call(stack.apiUrl, `/v1/payouts/${payout.id}`, { headers: { 'x-api-key': apiKey } });
    expect(read.json).toMatchObject({ status: 'PENDING' });
  });

  it('a PENDING payout whose workflow never existed: 503, the payout untouched', async () => {
    const { apiKey, payout } = await createPayout();
    await stack.db.query(
      "UPDATE payouts SET workflow_id = 'payout-never-started', run_id = $2 WHERE id = $1",
      [payout.id, '00000000-0000-4000-8000-000000000001'],
    );
    expectError(await cancel(apiKey, payout.id), 503, 'payment provider unavailable, retry later');
    const { rows } = await stack.db.query<{ status: string }>('SELECT status FROM payouts WHERE id = $1', [
      payout.id,
    ]);
    expect(rows[0]?.status).toBe('PENDING');
  });

  /** Waits for the refund case of a payment (the workflow opens it once it has judged the payment). */
  const refundCaseFor = (eventId: string) =>
    until(`the refund case of payment ${eventId}`, async () => {
      const { rows } = await stack.db.query<{ payout_id: string; status: string; amount_brl: string }>(
        'SELECT payout_id, status, amount_brl FROM refund_cases WHERE event_id = $1',
        [eventId],
      );
      return rows[0];
    });

  async function chargeIdOf(payoutId: string): Promise<string | undefined> {
    const { rows } = await stack.db.query<{ provider_charge_id: string }>(
      'SELECT provider_charge_id FROM payouts WHERE id = $1',
      [payoutId],
    );
    return rows[0]?.provider_charge_id;
  }
});
