import { createHash } from 'node:crypto';
import { payoutWorkflowId } from '../../src/workflows/payout.contract';
import { providerEventWorkflowId } from '../../src/workflows/provider-event.contract';
import { useStack } from '../support/stack';
import { startWebhookCapture } from '../support/sandbox';
import { until } from '../support/until';

// POST /webhooks/{provider} on real servers (docs/api.md "Provider webhook"). The sandbox's own webhooks go
// to a capture server instead of the api, so the test holds real provider tokens and decides how
// (and how often, and to which replica) they are delivered.
describe('provider webhook (dev server, PostgreSQL, anvil, sandbox, worker, 2 api replicas)', () => {
  let apiKey: string;
  let partnerId: string;
  let replica: { url: string };
  let capture: Awaited<ReturnType<typeof startWebhookCapture>>;
  let captured: string[];

  beforeAll(async () => {
    capture = await startWebhookCapture();
    captured = capture.captured;
  });
  afterAll(() => capture?.close());
  const stack = useStack(() => ({
    sandboxWebhookUrl: capture.url,
  }));
  beforeAll(async () => {
    replica = await stack.startApi();
    ({ apiKey, partnerId } = await stack.createPartner());
  });

  const deliver = (baseUrl: string, body: unknown, provider = 'sandbox') =>
    fetch(`${baseUrl}/webhooks/${provider}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const hash = (token: string) => createHash('sha256').update(token).digest('hex');

  /** The next token the sandbox sent, with the event type it stands for. */
  const nextToken = (type: string): Promise<string> =>
    until(
      `a ${type} webhook captured`,
      async () => {
        for (const token of captured) {
          const res = await fetch(`${stack.sandboxUrl}/pix/notification/${token}`);
          if (res.status === 200 && ((await res.json()) as { type: string }).type === type) {
            captured.splice(captured.indexOf(token), 1);
            return token;
          }
        }
        return undefined;
      },
      { timeoutMs: 15_000, intervalMs: 100 },
    );

  async function providerEventWorkflowsOnQueue(): Promise<string[]> {
    const ids: string[] = [];
    const query = `WorkflowType = 'providerEventWorkflow' AND TaskQueue = '${stack.config.TEMPORAL_TASK_QUEUE}'`;
    for await (const wf of stack.temporal.workflow.list({ query })) ids.push(wf.workflowId);
    return ids;
  }

  /** New events by the way they reached their payout (D77), over this stack's api and its replica. */
  async function eventPaths(): Promise<{ signal: number; workflow: number }> {
    const { values } = await stack.metrics.webhookEventPaths.get();
    const count = (path: string) => values.find((v) => v.labels.path === path)?.value ?? 0;
    return { signal: count('signal'), workflow: count('workflow') };
  }

  /** Deliveries by outcome, over this stack's api and its replica. */
  async function deliveries(): Promise<{ received: number; duplicate: number }> {
    const { values } = await stack.metrics.webhooks.get();
    const count = (outcome: string) =>
      values.find((v) => v.labels.provider === 'sandbox' && v.labels.outcome === outcome)?.value ?? 0;
    return { received: count('received'), duplicate: count('duplicate') };
  }

  it('signals the payout itself and changes it once for 50 simultaneous deliveries on 2 replicas', async () => {
    const { payout, receiver } = await stack.createPayout(apiKey);
    const payoutId = payout.id;
    await stack.pay(payout.pix_copy_paste);
    const token = await nextToken('pix.received');
    const pathsBefore = await eventPaths();
    const deliveriesBefore = await deliveries();

    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => deliver(i % 2 === 0 ? stack.apiUrl : replica.url, { token })),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(50).fill(200));
    for (const r of answers) expect(await r.json()).toEqual({ received: true });
    // Every delivery counted once, the copies that shared another's delivery included.
    expect(await deliveries()).toEqual({
      received: deliveriesBefore.received + 1,
      duplicate: deliveriesBefore.duplicate + 49,
    });

    const processing = await stack.waitForStatus(apiKey, payoutId, ['PROCESSING', 'COMPLETED', 'FAILED']);
    expect(processing.status).toBe('PROCESSING');

    // One new event, signalled by the api (D77): no provider-event workflow was needed.
    expect(await eventPaths()).toEqual({ signal: pathsBefore.signal + 1, workflow: pathsBefore.workflow });
    expect(await providerEventWorkflowsOnQueue()).toEqual([]);
    const { rows } = await stack.db.query(
      'SELECT token FROM webhook_tokens WHERE provider = $1 AND token = $2',
      ['sandbox', hash(token)],
    );
    expect(rows).toHaveLength(1);
    // Only the hash is stored: the token itself is the key to the provider's event.
    const leaked = await stack.db.query('SELECT 1 FROM webhook_tokens WHERE token = $1', [token]);
    expect(leaked.rowCount).toBe(0);

    // Copies that arrive together share one read and one signal per replica (the replica here has
    // routes of its own, as a replica's process would); the payout counts the event once (by its
    // event id) and moved once.
    const history = await stack.temporal.workflow.getHandle(payoutWorkflowId(payoutId)).fetchHistory();
    const signals = history.events!.filter((e) => e.workflowExecutionSignaledEventAttributes);
    expect(signals.length).toBeGreaterThanOrEqual(1);
    expect(signals.length).toBeLessThanOrEqual(2);
    const { rows: versions } = await stack.db.query<{ status: string; version: number }>(
      'SELECT status, version FROM payouts WHERE id = $1',
      [payoutId],
    );
    // Opened at version 1 with the charge the api created (D81); PROCESSING is the one move.
    expect(versions).toEqual([{ status: 'PROCESSING', version: 2 }]);

    // Redelivered later (a provider retry), on either replica: acknowledged and discarded.
    expect((await deliver(replica.url, { token })).status).toBe(200);
    expect((await deliver(stack.apiUrl, { token })).status).toBe(200);
    const signalsAfter = (
      await stack.temporal.workflow.getHandle(payoutWorkflowId(payoutId)).fetchHistory()
    ).events!.filter((e) => e.workflowExecutionSignaledEventAttributes);
    expect(signalsAfter).toHaveLength(signals.length);

    // The settlement webhook completes the payout; the USDT moved exactly once.
    const settlementToken = await nextToken('settlement.completed');
    expect((await deliver(replica.url, { token: settlementToken })).status).toBe(200);
    const done = await stack.waitForStatus(apiKey, payoutId, ['COMPLETED', 'FAILED']);
    expect(done.status).toBe('COMPLETED');
    const transfers = await stack.chain.transfersTo(receiver);
    expect(transfers.count).toBe(1);
    // Two tokens in all (payment, settlement), both signalled by the api.
    expect(await eventPaths()).toEqual({ signal: pathsBefore.signal + 2, workflow: pathsBefore.workflow });
    expect(await providerEventWorkflowsOnQueue()).toEqual([]);
  });

  it('hands a payment to the provider-event workflow when the payout run has closed behind the read model: a person decides its refund', async () => {
    const { payout, receiver } = await stack.createPayout(apiKey);
    // The run ends while its read model still says PENDING (an operator terminated it, or a bug failed
    // it): the api's signal finds no run, so the event goes to its workflow, whose rule for a payment
    // after the end opens a refund case that a person decides.
    await stack.temporal.workflow.getHandle(payoutWorkflowId(payout.id)).terminate('test: run closed');
    await stack.pay(payout.pix_copy_paste);
    const token = await nextToken('pix.received');
    const pathsBefore = await eventPaths();

    expect((await deliver(stack.apiUrl, { token })).status).toBe(200);

    const handle = stack.temporal.workflow.getHandle(providerEventWorkflowId('sandbox', hash(token)));
    await expect(handle.result()).resolves.toBe('late_payment');
    expect(await eventPaths()).toEqual({ signal: pathsBefore.signal, workflow: pathsBefore.workflow + 1 });
    const { rows } = await stack.db.query<{ kind: string }>(
      'SELECT kind FROM refund_cases WHERE payout_id = $1',
      [payout.id],
    );
    expect(rows).toEqual([{ kind: 'payout_unresolved' }]);
    expect((await stack.chain.transfersTo(receiver)).count).toBe(0);
  });

  it('answers 404 unknown provider for a provider that is not configured', async () => {
    const res = await deliver(stack.apiUrl, { token: 'abc' }, 'stripe');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'unknown provider' });
  });

  const TOKEN_FORMAT = 'token must be 1-512 characters of A-Z, a-z, 0-9, ".", "_", "~", "-"';
  it.each([
    ['no token', {}, 'token is required'],
    ['a token that is not a string', { token: 42 }, 'token must be a string'],
    ['an empty token', { token: '' }, TOKEN_FORMAT],
    ['a token with characters outside [A-Za-z0-9._~-]', { token: 'abc/../def' }, TOKEN_FORMAT],
    ['a token over 512 characters', { token: 'a'.repeat(513) }, TOKEN_FORMAT],
    ['an array body', [], 'request body must be a JSON object'],
    ['malformed JSON', '{"token": ', 'invalid JSON body'],
  ])('answers 400 for %s', async (_name, body, message) => {
    const res = await deliver(stack.apiUrl, body);
    expect(res.status).toBe(400);
    const answer = (await res.json()) as { error: string };
    expect(answer).toEqual({ error: message });
  });

  it('acknowledges a token the provider does not know, changes nothing, and keeps asking for it', async () => {
    const token = 'never-issued-by-the-provider_0123456789';
    const snapshot = () =>
      stack.db.query('SELECT id, status, version FROM payouts WHERE partner_id = $1 ORDER BY id', [
        partnerId,
      ]);
    const before = (await snapshot()).rows;
    const res = await deliver(replica.url, { token });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true });
    // Asked again over about 20 minutes before it is dropped (unknown_token: the time-skipping test of
    // the provider-event workflow shows the end); here, real time: it is asked again, still running.
    const handle = stack.temporal.workflow.getHandle(providerEventWorkflowId('sandbox', hash(token)));
    await until(
      'the token asked for a second time',
      async () => {
        const history = await handle.fetchHistory();
        const fetches = (history.events ?? []).filter((e) => e.markerRecordedEventAttributes).length;
        return fetches >= 2 ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect((await snapshot()).rows).toEqual(before);
    await handle.terminate('test over');
  }, 60_000);
});
