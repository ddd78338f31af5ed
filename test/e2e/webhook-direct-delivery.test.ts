import { createHash, randomBytes } from 'node:crypto';
import { createPool } from '../../src/adapters/db/pool';
import { ENCRYPTED_ENCODING } from '../../src/temporal/payload-codec';
import { payoutWorkflowId } from '../../src/workflows/payout.contract';
import { providerEventWorkflowId } from '../../src/workflows/provider-event.contract';
import { useStack } from '../support/stack';
import { startWebhookCapture } from '../support/sandbox';
import { until } from '../support/until';

// The api's own delivery of a webhook's event (docs/decisions.md D77) on real servers, on the paths
// test/e2e/webhook-delivery.test.ts does not take: two replicas that signal one event, copies that
// arrive while their first copy is being delivered, a provider too slow for the api's deadline, and a
// payout whose read model says it ended. The service reaches the provider through a proxy the test
// holds; the sandbox's webhooks go to a capture server, so the test decides how, and where, each
// token is delivered.
describe('webhook delivered by the api itself (D77), real servers', () => {
  let apiKey: string;
  let replica: { url: string };
  let capture: Awaited<ReturnType<typeof startWebhookCapture>>;
  let captured: string[];

  beforeAll(async () => {
    capture = await startWebhookCapture();
    captured = capture.captured;
  });
  afterAll(() => capture?.close());
  const stack = useStack(() => ({
    proxyProvider: true,
    sandboxWebhookUrl: capture.url,
  }));
  beforeAll(async () => {
    // Another api in this process, as a second replica would run: its own routes, the same stack.
    replica = await stack.startApi();
    ({ apiKey } = await stack.createPartner());
  });

  const deliver = (baseUrl: string, token: string) =>
    fetch(`${baseUrl}/webhooks/sandbox`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
    });
  const hash = (token: string) => createHash('sha256').update(token).digest('hex');

  /**
   * The next token the sandbox sent for `type` and this payout (read straight from the sandbox, not
   * through the proxy, which a test may be holding).
   */
  const nextToken = (type: string, payoutId: string): Promise<string> =>
    until(
      `a ${type} webhook captured for ${payoutId}`,
      async () => {
        for (const token of captured) {
          const res = await fetch(`${stack.sandboxUrl}/pix/notification/${token}`);
          if (res.status !== 200) continue;
          const event = (await res.json()) as { type: string; external_id: string };
          if (event.type === type && event.external_id === payoutId) {
            captured.splice(captured.indexOf(token), 1);
            return token;
          }
        }
        return undefined;
      },
      { timeoutMs: 15_000, intervalMs: 100 },
    );

  const counts = async () => {
    const paths = (await stack.metrics.webhookEventPaths.get()).values;
    const outcomes = (await stack.metrics.webhooks.get()).values;
    const path = (p: string) => paths.find((v) => v.labels.path === p)?.value ?? 0;
    const outcome = (o: string) =>
      outcomes.find((v) => v.labels.outcome === o && v.labels.provider === 'sandbox')?.value ?? 0;
    return {
      signal: path('signal'),
      workflow: path('workflow'),
      received: outcome('received'),
      duplicate: outcome('duplicate'),
    };
  };
  // A test that fails while it holds the provider's reads must not leave them held for the next.
  const holds: (() => void)[] = [];
  afterEach(() => holds.splice(0).forEach((release) => release()));
  const holdReads = () => {
    const held = stack.providerProxy!.hold('GET /pix/notification');
    holds.push(held.release);
    return held;
  };
  const reads = () => stack.providerProxy!.requests().get('GET /pix/notification') ?? 0;
  const signalsTo = async (payoutId: string) =>
    (
      (await stack.temporal.workflow.getHandle(payoutWorkflowId(payoutId)).fetchHistory()).events ?? []
    ).filter((e) => e.workflowExecutionSignaledEventAttributes).length;
  const payoutRow = async (payoutId: string) =>
    (
      await stack.db.query<{ status: string; version: number }>(
        'SELECT status, version FROM payouts WHERE id = $1',
        [payoutId],
      )
    ).rows;

  it('two replicas that take one token at the same moment each read it and may each signal it; the payout counts it once', async () => {
    const { payout } = await stack.createPayout(apiKey);
    await stack.pay(payout.pix_copy_paste);
    const token = await nextToken('pix.received', payout.id);
    const before = { ...(await counts()), reads: reads() };

    // Both replicas' reads are held at the provider, so both are past the de-dup check together: the
    // moment D77 says "two replicas ... may each signal it".
    const held = holdReads();
    const answers = [deliver(stack.apiUrl, token), deliver(replica.url, token)];
    // Within the api's 2 s deadline for its read, or a replica would have given up on it.
    await until(
      'both replicas reading the event',
      async () => (reads() >= before.reads + 2 ? true : undefined),
      {
        timeoutMs: 1_500,
        intervalMs: 20,
      },
    );
    held.release();
    expect((await Promise.all(answers)).map((r) => r.status)).toEqual([200, 200]);

    // Up to two signals (each replica may signal it; one may find the other's row or be a moment
    // late), one change: the payout counted the event once, by its event id.
    const signals = await signalsTo(payout.id);
    expect(signals).toBeGreaterThanOrEqual(1);
    expect(signals).toBeLessThanOrEqual(2);
    // The api's signal carries the payer's payment: encrypted by the api's client as every payload is.
    const { events } = await stack.temporal.workflow.getHandle(payoutWorkflowId(payout.id)).fetchHistory();
    for (const e of (events ?? []).filter((ev) => ev.workflowExecutionSignaledEventAttributes)) {
      const payload = e.workflowExecutionSignaledEventAttributes!.input!.payloads![0]!;
      expect(Buffer.from(payload.metadata!.encoding!).toString()).toBe(ENCRYPTED_ENCODING);
    }
    await stack.waitForStatus(apiKey, payout.id, ['PROCESSING', 'COMPLETED']);
    expect(await payoutRow(payout.id)).toEqual([{ status: 'PROCESSING', version: 2 }]);
    // One new event, one de-dup row, one "received" and one "duplicate"; no provider-event workflow.
    const after = await counts();
    expect(after).toEqual({
      signal: before.signal + 1,
      workflow: before.workflow,
      received: before.received + 1,
      duplicate: before.duplicate + 1,
    });
    const { rowCount } = await stack.db.query('SELECT 1 FROM webhook_tokens WHERE token = $1', [hash(token)]);
    expect(rowCount).toBe(1);
    await expect(
      stack.temporal.workflow.getHandle(providerEventWorkflowId('sandbox', hash(token))).describe(),
    ).rejects.toThrow();
  });

  it('counts every copy of a token: those that arrive while the first is being delivered are duplicates', async () => {
    const { payout } = await stack.createPayout(apiKey);
    await stack.pay(payout.pix_copy_paste);
    const token = await nextToken('pix.received', payout.id);
    const before = { ...(await counts()), reads: reads() };

    const held = holdReads();
    const first = deliver(stack.apiUrl, token);
    await held.arrived;
    // Four more copies to the same replica while the first one's read is held: one read, one signal.
    const copies = Array.from({ length: 4 }, () => deliver(stack.apiUrl, token));
    await new Promise((resolve) => setTimeout(resolve, 300));
    held.release();
    expect((await Promise.all([first, ...copies])).map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(reads()).toBe(before.reads + 1);
    expect(await signalsTo(payout.id)).toBe(1);

    // As before D77, each delivery is counted once: one received, the copies duplicates.
    const after = await counts();
    expect(after).toEqual({
      signal: before.signal + 1,
      workflow: before.workflow,
      received: before.received + 1,
      duplicate: before.duplicate + 4,
    });
  });

  it('hands the event to its workflow when the read model cannot be read, and the payout moves once', async () => {
    // An api whose database role may record tokens and take throttle tokens but not read payouts:
    // the read model's query fails as it would on a broken replica, everything else works.
    const role = `r77_no_payouts_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(12).toString('hex');
    await stack.db.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
    let restricted: ReturnType<typeof createPool> | undefined;
    try {
      await stack.db.query(`GRANT USAGE ON SCHEMA public TO ${role}`);
      await stack.db.query(`GRANT SELECT, INSERT ON webhook_tokens TO ${role}`);
      await stack.db.query(`GRANT SELECT, INSERT, UPDATE ON rate_limit_buckets TO ${role}`);
      const url = new URL(stack.config.DATABASE_URL);
      url.username = role;
      url.password = password;
      restricted = createPool(url.toString(), 2);
      const blind = await stack.startApi({}, { db: restricted });

      const { payout } = await stack.createPayout(apiKey);
      await stack.pay(payout.pix_copy_paste);
      const token = await nextToken('pix.received', payout.id);
      const before = await counts();
      expect((await deliver(blind.url, token)).status).toBe(200);
      expect(await counts()).toEqual({
        ...before,
        workflow: before.workflow + 1,
        received: before.received + 1,
      });
      const handle = stack.temporal.workflow.getHandle(providerEventWorkflowId('sandbox', hash(token)));
      await expect(handle.result()).resolves.toBe('delivered');
      await stack.waitForStatus(apiKey, payout.id, ['PROCESSING', 'COMPLETED']);
      expect(await signalsTo(payout.id)).toBe(1);
      expect((await payoutRow(payout.id))[0]?.version).toBeGreaterThanOrEqual(2);
    } finally {
      await restricted?.end();
      await stack.db.query(`DROP OWNED BY ${role}`);
      await stack.db.query(`DROP ROLE ${role}`);
    }
  });

  it('hands a payment for a payout whose read model says COMPLETED to its workflow: refunded once, the payout untouched', async () => {
    const { payout, receiver } = await stack.createPayout(apiKey);
    await stack.pay(payout.pix_copy_paste);
    expect((await deliver(stack.apiUrl, await nextToken('pix.received', payout.id))).status).toBe(200);
    expect((await deliver(stack.apiUrl, await nextToken('settlement.completed', payout.id))).status).toBe(
      200,
    );
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED']);
    expect(done.status).toBe('COMPLETED');
    await stack.temporal.workflow.getHandle(payoutWorkflowId(payout.id)).result();
    const signalsBefore = await signalsTo(payout.id);

    // The payer pays the same BR Code again: a payment after the end.
    const late = await stack.payWith(payout.pix_copy_paste, {});
    const token = await nextToken('pix.received', payout.id);
    const before = await counts();
    expect((await deliver(stack.apiUrl, token)).status).toBe(200);
    expect(await counts()).toEqual({
      ...before,
      workflow: before.workflow + 1,
      received: before.received + 1,
    });
    const handle = stack.temporal.workflow.getHandle(providerEventWorkflowId('sandbox', hash(token)));
    await expect(handle.result()).resolves.toBe('late_payment');
    // Redelivered: nothing more.
    expect((await deliver(replica.url, token)).status).toBe(200);

    const { rows } = await stack.db.query<{ event_id: string; kind: string }>(
      'SELECT event_id, kind FROM refund_cases WHERE payout_id = $1',
      [payout.id],
    );
    expect(rows).toEqual([{ event_id: late, kind: 'late_payment' }]);
    expect(await signalsTo(payout.id)).toBe(signalsBefore);
    expect((await payoutRow(payout.id))[0]?.status).toBe('COMPLETED');
    expect(await stack.chain.transfersTo(receiver)).toMatchObject({ count: 1 });
  });

  // Last in the file: after a failed read the api leaves every event to its workflow for 10 s, which
  // would make the fallback tests above pass for that reason instead of their own.
  it('answers when the provider is slow, and the event reaches the payout once through its workflow', async () => {
    const { payout, receiver } = await stack.createPayout(apiKey);
    await stack.pay(payout.pix_copy_paste);
    const token = await nextToken('pix.received', payout.id);
    const before = await counts();

    const held = holdReads();
    // The api's read gives up at its 2 s deadline (D77) and the webhook is answered, its event
    // handed to a provider-event workflow.
    const res = await deliver(stack.apiUrl, token);
    expect(res.status).toBe(200);
    expect(await counts()).toEqual({
      ...before,
      workflow: before.workflow + 1,
      received: before.received + 1,
    });
    const handle = stack.temporal.workflow.getHandle(providerEventWorkflowId('sandbox', hash(token)));
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect(await signalsTo(payout.id)).toBe(0);
    expect((await payoutRow(payout.id))[0]?.status).toBe('PENDING');

    held.release();
    await expect(handle.result()).resolves.toBe('delivered');
    await stack.waitForStatus(apiKey, payout.id, ['PROCESSING', 'COMPLETED']);
    expect(await signalsTo(payout.id)).toBe(1);
    // The settlement: the api leaves events to their workflows for 10 s after a failed read, so this
    // one may go either way; either way the payout completes once.
    await deliver(stack.apiUrl, await nextToken('settlement.completed', payout.id));
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED']);
    expect(done.status).toBe('COMPLETED');
    expect(await stack.chain.transfersTo(receiver)).toMatchObject({ count: 1 });
  });
});
