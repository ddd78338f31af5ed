import { createHash, randomUUID } from 'node:crypto';
import type { Address, Hex } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import type { PayoutResponse } from '../../src/domain/payout';
import { providerEventWorkflowId } from '../../src/workflows/provider-event.contract';
import { freePort } from '../../dev/local/infra/ports';
import { expectPayoutInvariants } from '../support/payout-invariants';
import { startProcessStack, type ApiProcess, type ProcessStack } from '../support/process-stack';
import type { ServiceProcess } from '../support/service-process';
import { until } from '../support/until';

// Two api replicas and two workers (separate processes, treasury mode): storms of creates with and
// without Idempotency-Key, one webhook token delivered 50 times concurrently to both replicas, GETs
// polling through every transition, and all payouts settling at once from the treasury. Afterwards
// the invariants are checked against PostgreSQL, Temporal, the provider and the chain.

const KEYS = 6;
const REQUESTS_PER_KEY = 3;
const WITHOUT_KEY = 6;
const ORDER = ['PENDING', 'PROCESSING', 'COMPLETED'];

describe('concurrency invariants (2 api replicas, 2 workers, treasury mode)', () => {
  let stack: ProcessStack;
  let apis: ApiProcess[];
  let workers: ServiceProcess[];
  let partner: { partnerId: string; apiKey: string };
  const startedAt = Date.now();

  beforeAll(async () => {
    stack = await startProcessStack();
    partner = await stack.createPartner();
    apis = await Promise.all([
      stack.startApi({ mode: 'treasury' }),
      freePort().then((port) => stack.startApi({ port, mode: 'treasury' })),
    ]);
    workers = await Promise.all([stack.startWorker(), stack.startWorker()]);
  }, 240_000);
  afterAll(async () => {
    await stack?.close();
    process.stdout.write(`concurrency invariants: ${Math.round((Date.now() - startedAt) / 1000)} s\n`);
  });

  it('holds every invariant through storms, duplicate webhooks and concurrent settlement', async () => {
    const post = async (apiUrl: string, key?: string): Promise<{ status: number; body: PayoutResponse }> => {
      const res = await fetch(`${apiUrl}/v1/payouts`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': partner.apiKey,
          ...(key ? { 'idempotency-key': key } : {}),
        },
        body: JSON.stringify({
          amount_brl: 100.0,
          pix_key: '12345678901',
          pix_key_type: 'CPF',
          receiver_wallet: privateKeyToAddress(generatePrivateKey()),
        }),
      });
      return { status: res.status, body: (await res.json()) as PayoutResponse };
    };
    // A client retries a 409 (same key in flight) until it gets the payout.
    const postUntilAnswered = async (apiUrl: string, key: string) => {
      for (;;) {
        const r = await post(apiUrl, key);
        if (r.status !== 409) return r;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };

    // Storm of creates on both replicas.
    const keys = Array.from({ length: KEYS }, () => `storm-${randomUUID()}`);
    const keyed = await Promise.all(
      keys.flatMap((key) =>
        Array.from({ length: REQUESTS_PER_KEY }, (_, i) =>
          postUntilAnswered(apis[i % 2]!.url, key).then((r) => ({ key, ...r })),
        ),
      ),
    );
    const unkeyed = await Promise.all(Array.from({ length: WITHOUT_KEY }, (_, i) => post(apis[i % 2]!.url)));
    for (const r of [...keyed, ...unkeyed]) expect([200, 201]).toContain(r.status);
    const byKey = new Map<string, Set<string>>();
    for (const r of keyed) byKey.set(r.key, (byKey.get(r.key) ?? new Set()).add(r.body.id));
    for (const ids of byKey.values()) expect(ids.size).toBe(1); // one payout per key
    const payouts = [...new Map([...keyed, ...unkeyed].map((r) => [r.body.id, r.body])).values()];
    expect(payouts).toHaveLength(KEYS + WITHOUT_KEY);

    // One workflow per payout in Temporal, found by PartnerId; one charge each at the provider.
    const workflows = await until('the workflows indexed', async () => {
      const found: string[] = [];
      for await (const wf of stack.temporal.workflow.list({
        query: `WorkflowType = "payoutWorkflow" AND PartnerId = "${partner.partnerId}"`,
      })) {
        found.push(wf.workflowId);
      }
      return found.length >= payouts.length ? found : undefined;
    });
    expect(workflows).toHaveLength(payouts.length);
    for (const p of payouts) expect(stack.provider.chargesCreated().get(p.id)).toBe(1);

    // A partner's payout id finds its workflow, whatever the workflow id (PayoutId search attribute).
    const idempotent = keyed[0]!.body;
    const byPayoutId: string[] = [];
    for await (const wf of stack.temporal.workflow.list({ query: `PayoutId = "${idempotent.id}"` })) {
      byPayoutId.push(wf.workflowId);
    }
    expect(byPayoutId).toHaveLength(1);
    expect(byPayoutId[0]).toContain('-idem-');

    // GETs poll both replicas through every transition; statuses never go back.
    const seen = new Map<string, string[]>();
    let polling = true;
    const poller = (async () => {
      while (polling) {
        await Promise.all(
          payouts.map(async (p, i) => {
            const res = await fetch(`${apis[i % 2]!.url}/v1/payouts/${p.id}`, {
              headers: { 'x-api-key': partner.apiKey },
            });
            expect(res.status).toBe(200);
            const body = (await res.json()) as PayoutResponse;
            seen.set(p.id, [...(seen.get(p.id) ?? []), body.status]);
          }),
        );
      }
    })();

    // Pay one, and deliver its webhook token 50 times at once to both replicas.
    const first = payouts[0]!;
    const tokensBefore = stack.webhookTokens.length;
    await stack.pay(first.pix_copy_paste);
    const token = await until('the payment webhook', async () => stack.webhookTokens[tokensBefore]);
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        fetch(`${apis[i % 2]!.url}/webhooks/sandbox`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ token }),
        }).then((r) => r.status),
      ),
    );
    expect(answers.every((s) => s === 200)).toBe(true);

    // Everyone else pays at once: two workers settle them concurrently from the treasury.
    await Promise.all(payouts.slice(1).map((p) => stack.pay(p.pix_copy_paste)));
    for (const p of payouts)
      await stack.waitForStatus(partner.apiKey, p.id, ['COMPLETED', 'FAILED'], 120_000);
    polling = false;
    await poller;

    for (const statuses of seen.values()) {
      const ranks = statuses.map((s) => ORDER.indexOf(s));
      expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
    }

    // One applied event per token, and one de-dup row per token the provider sent, whatever the number
    // of deliveries (the stack's database is its own: every row there is this test's). Copies that
    // arrive together cost each api replica one read and one signal (D77); a provider-event workflow
    // only when the api could not deliver itself, never two; the payout counts the event once.
    const hash = (t: string) => createHash('sha256').update(t).digest('hex');
    const tokenHash = hash(token);
    const sent = stack.webhookTokens.map(hash).sort();
    const recorded = await until('a de-dup row for every token sent', async () => {
      const { rows } = await stack.db.query<{ token: string }>(
        'SELECT token FROM webhook_tokens ORDER BY token',
      );
      return rows.length >= sent.length ? rows.map((r) => r.token) : undefined;
    });
    expect(recorded).toEqual(sent);
    const eventWorkflows: string[] = [];
    for await (const wf of stack.temporal.workflow.list({
      query: `WorkflowId = "${providerEventWorkflowId('sandbox', tokenHash)}"`,
    })) {
      eventWorkflows.push(wf.runId);
    }
    expect(eventWorkflows.length).toBeLessThanOrEqual(1);
    const { rows: located } = await stack.db.query<{ workflow_id: string }>(
      'SELECT workflow_id FROM payouts WHERE id = $1',
      [first.id],
    );
    const firstHistory = await stack.temporal.workflow.getHandle(located[0]!.workflow_id).fetchHistory();
    const signals = (firstHistory.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes);
    expect(signals.length).toBeGreaterThanOrEqual(1);
    expect(signals.length).toBeLessThanOrEqual(apis.length + eventWorkflows.length);

    // Every payout: right state, one charge, one transfer, read model equal to the workflow.
    for (const p of payouts) {
      await expectPayoutInvariants(stack, {
        ...partner,
        id: p.id,
        receiver: p.receiver_wallet as Address,
        paid: true,
        expected: 'COMPLETED',
      });
    }

    // Treasury nonces: one per payout, distinct, no gap, each transfer mined once.
    const { rows: transfers } = await stack.db.query<{ nonce: bigint; tx_hash: Hex }>(
      'SELECT nonce, tx_hash FROM treasury_transfers ORDER BY nonce',
    );
    expect(transfers).toHaveLength(payouts.length);
    expect(transfers.map((t) => Number(t.nonce))).toEqual(transfers.map((_, i) => i));
    const mined = Number(
      await stack.chain.rpc<Hex>('eth_getTransactionCount', [stack.treasury.address, 'latest']),
    );
    expect(mined).toBe(payouts.length);

    // Both workers settled some of them: the concurrency above was real.
    const broadcasts = workers.map(
      (w) => w.output.filter((line) => line.includes('"msg":"treasury transfer broadcast"')).length,
    );
    expect({ broadcasts, byBoth: broadcasts.every((n) => n > 0) }).toEqual({ broadcasts, byBoth: true });
  }, 300_000);
});
