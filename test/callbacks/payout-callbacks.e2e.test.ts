import { createSecretBox } from '../../src/adapters/secrets/secret-box';
import { generateCallbackSecret } from '../../src/adapters/callbacks/signature';
import { setPartnerCallback } from '../../src/adapters/db/partners-repo';
import { listCallbackEvents } from '../../src/adapters/db/callbacks-repo';
import { verifyCallback } from '../../examples/verify-callback-signature';
import { callbackWorkflowId } from '../../src/domain/callback-event';
import type { CallbackDeliveryResult } from '../../src/workflows/callback.contract';
import { useStack } from '../support/stack';
import { until } from '../support/until';
import { startReceiver, type Receiver } from './receiver';
import { WorkflowNotFoundError } from '@temporalio/client';
import { payloadKeysOf } from '../../src/main/wiring';

// The whole service on real servers: a payout paid through the sandbox reaches COMPLETED (or
// FAILED) and the partner's receiver, on loopback (explicitly allowed), is told with the GET shape.
describe('partner callbacks end to end', () => {
  const stack = useStack({ env: { CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' } });
  let receiver: Receiver;
  const secret = generateCallbackSecret();

  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(() => receiver?.close());

  const forPayout = (id: string) => (r: { rawBody: Buffer }) =>
    (JSON.parse(r.rawBody.toString('utf8')) as { payout: { id: string } }).payout.id === id;

  /** partner_callback_deliveries_total{outcome} of the stack's (in-process) worker. */
  async function deliveries(outcome: string): Promise<number> {
    const metric = await stack.metrics.registry.getSingleMetric('partner_callback_deliveries_total')?.get();
    return metric?.values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
  }

  async function createPayout(apiKey: string): Promise<{ id: string; pixCopyPaste: string }> {
    const { payout } = await stack.createPayout(apiKey);
    return { id: payout.id, pixCopyPaste: payout.pix_copy_paste };
  }

  /** A partner whose callbacks go to the receiver, signed with `secret`. */
  async function partnerWithCallback(): Promise<{ partnerId: string; apiKey: string }> {
    const partner = await stack.createPartner();
    const callback = { url: receiver.url, secret };
    await setPartnerCallback(
      stack.db,
      partner.partnerId,
      callback,
      createSecretBox(payloadKeysOf(stack.config)),
    );
    return partner;
  }

  /**
   * The delivery workflow's result. GET can show COMPLETED (from the workflow's query) a moment
   * before the payout workflow has started the callback child, so the child is waited for first.
   */
  async function callbackResult(
    payoutId: string,
    event: 'payout.completed' | 'payout.failed',
  ): Promise<CallbackDeliveryResult> {
    const handle = stack.temporal.workflow.getHandle(callbackWorkflowId(payoutId, event));
    const started = () =>
      handle.describe().then(
        () => true,
        (err: unknown) => {
          if (err instanceof WorkflowNotFoundError) return undefined;
          throw err;
        },
      );
    await until(`the ${event} callback workflow of ${payoutId}`, started, {
      timeoutMs: 15_000,
      intervalMs: 100,
    });
    return (await handle.result()) as CallbackDeliveryResult;
  }

  it('sends payout.completed, signed, with the same payout as GET', async () => {
    const { partnerId, apiKey } = await partnerWithCallback();
    const payout = await createPayout(apiKey);

    const deliveredBefore = await deliveries('delivered');
    await stack.pay(payout.pixCopyPaste);
    const [got] = await receiver.waitFor(1, forPayout(payout.id));
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED']);

    expect(done.status).toBe('COMPLETED');
    expect(JSON.parse(got!.rawBody.toString('utf8'))).toEqual({ event: 'payout.completed', payout: done });
    expect(got!.headers['webhook-id']).toBe(`evt_${payout.id}_completed`);
    expect(got!.headers['content-type']).toBe('application/json');
    expect(verifyCallback({ rawBody: got!.rawBody, headers: got!.headers, secret }).valid).toBe(true);

    const result = await callbackResult(payout.id, 'payout.completed');
    expect(result).toMatchObject({ outcome: 'delivered', attempts: 1 });
    expect((await deliveries('delivered')) - deliveredBefore).toBe(1);
    const [event] = await listCallbackEvents(stack.db, partnerId);
    expect(event).toMatchObject({ payoutId: payout.id, event: 'payout.completed', state: 'delivered' });
  });

  it('sends payout.failed when settlement fails, with the FAILED payout as GET shows it', async () => {
    const { apiKey } = await partnerWithCallback();
    const payout = await createPayout(apiKey);

    await stack.pay(payout.pixCopyPaste, 'settlement_failed');
    const [got] = await receiver.waitFor(1, forPayout(payout.id));
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED']);

    expect(done.status).toBe('FAILED');
    expect(JSON.parse(got!.rawBody.toString('utf8'))).toEqual({ event: 'payout.failed', payout: done });
    expect(got!.headers['webhook-id']).toBe(`evt_${payout.id}_failed`);
  });

  it('sends nothing for a partner without a callback URL', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const payout = await createPayout(apiKey);
    const skippedBefore = await deliveries('not_configured');

    await stack.pay(payout.pixCopyPaste);
    await stack.waitForStatus(apiKey, payout.id, ['COMPLETED']);
    const result = await callbackResult(payout.id, 'payout.completed');

    expect(result).toMatchObject({ outcome: 'not_configured', attempts: 0 });
    expect((await deliveries('not_configured')) - skippedBefore).toBe(1);
    expect(receiver.received.filter(forPayout(payout.id))).toHaveLength(0);
    const [event] = await listCallbackEvents(stack.db, partnerId);
    expect(event).toMatchObject({ payoutId: payout.id, state: 'skipped' });
  });
});
