import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { parse } from 'yaml';
import type { PayoutResponse } from '../../src/domain/payout';
import { freePort, isListening } from '../../dev/local/infra/ports';
import { payoutWorkflowId } from '../../src/workflows/payout.contract';
import type { ServiceProcess } from '../support/service-process';
import { useStack } from '../support/stack';
import { until } from '../support/until';

// The api and the worker as real processes (`node --import tsx src/...`, as the launcher runs them),
// on the test stack's Temporal dev server, anvil and sandbox, and a database of their own (the
// gauges over the read model then count this test's payouts only). One payout goes through them;
// then their actual output is checked: the Prometheus expositions against ops/alerts.yml, the logs
// for request and payout ids and for secrets, and Temporal's history for readable personal data.

const ROOT = path.resolve(__dirname, '../..');
const CPF = `9${randomBytes(5).readUIntBE(0, 5).toString().padStart(10, '0')}`.slice(0, 11);
const CODEC_TOKEN = `codec-${randomBytes(12).toString('hex')}`;
const WEBHOOK_TOKEN = `tok-${randomBytes(24).toString('base64url')}`;
const REQUEST_ID = `ops-test-${randomUUID().slice(0, 8)}`;

/**
 * Metric names with at least one sample in a Prometheus text exposition. A family declared by its
 * HELP/TYPE lines alone has no series: a rule over it never evaluates, and increase() misses the
 * first event of a series that first appears already at 1.
 */
function sampledMetricNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const line of exposition.split('\n')) {
    const sample = /^([a-zA-Z_:][\w:]*)[{ ]/.exec(line);
    if (sample && !line.startsWith('#')) names.add(sample[1]!);
  }
  return names;
}

const PROMQL_WORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'inf',
  'nan',
]);

/** The metric names a PromQL expression selects: identifiers that are not functions, labels or keywords. */
function selectedMetrics(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""') // strings
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // range and subquery durations
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ''); // label lists
  const names: string[] = [];
  for (const match of bare.matchAll(/[a-zA-Z_:][\w:]*/g)) {
    const after = bare.slice(match.index! + match[0].length).trimStart();
    if (after.startsWith('(') || PROMQL_WORDS.has(match[0].toLowerCase())) continue;
    names.push(match[0]);
  }
  return names;
}

describe('api and worker processes: metrics, alert rules, logs, encrypted payloads', () => {
  // No in-process worker: the spawned one is the only one polling the task queue.
  const stack = useStack({ worker: false, ownDatabase: true });
  let api: ServiceProcess;
  let worker: ServiceProcess;
  let apiKey: string;
  let partnerId: string;
  let apiUrl: string;
  let apiMetricsUrl: string;
  let workerMetricsUrl: string;
  let treasuryApiMetricsUrl: string;
  let codecUrl: string;
  let payout: PayoutResponse;

  beforeAll(async () => {
    ({ apiKey, partnerId } = await stack.createPartner('operability'));
    const [port, metricsPort, workerMetricsPort] = [await freePort(), await freePort(), await freePort()];
    const env = {
      NODE_ENV: 'development',
      LOG_LEVEL: 'debug', // the most output, so the most chances for a secret to show
      HOST: '127.0.0.1',
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      WORKER_METRICS_PORT: String(workerMetricsPort),
      CODEC_AUTH_TOKEN: CODEC_TOKEN,
    };
    // Each fails at once, with its output, if its process exits before it is ready. A second api in
    // treasury mode exposes what only that mode has (the price feeds it quotes from).
    const treasuryMetricsPort = await freePort();
    [worker, api] = await Promise.all([
      stack.startProcess('worker', env),
      stack.startProcess('api', env),
      stack.startProcess('api', {
        SETTLEMENT_MODE: 'treasury',
        METRICS_PORT: String(treasuryMetricsPort),
        CODEC_AUTH_TOKEN: CODEC_TOKEN,
      }),
    ]);
    treasuryApiMetricsUrl = `http://127.0.0.1:${treasuryMetricsPort}/metrics`;
    apiUrl = `http://127.0.0.1:${port}`;
    apiMetricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    workerMetricsUrl = `http://127.0.0.1:${workerMetricsPort}/metrics`;
    codecUrl = `http://127.0.0.1:${metricsPort}/codec`;
    await until('the worker metrics port', async () => {
      if (!worker.running) throw new Error(`the worker exited:\n${worker.tail()}`);
      return (await isListening('127.0.0.1', workerMetricsPort)) || undefined;
    });
  }, 180_000);

  it('take a payout from POST to COMPLETED', async () => {
    const res = await fetch(`${apiUrl}/v1/payouts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey, 'x-request-id': REQUEST_ID },
      body: JSON.stringify({
        amount_brl: 100,
        receiver_wallet: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
        pix_key: CPF,
        pix_key_type: 'CPF',
      }),
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('x-request-id')).toBe(REQUEST_ID);
    const created = (await res.json()) as PayoutResponse;
    await stack.pay(created.pix_copy_paste);
    payout = await until('COMPLETED', async () => {
      const read = await fetch(`${apiUrl}/v1/payouts/${created.id}`, { headers: { 'x-api-key': apiKey } });
      const body = (await read.json()) as PayoutResponse;
      return ['COMPLETED', 'FAILED'].includes(body.status) ? body : undefined;
    });
    expect(payout.status).toBe('COMPLETED');

    // A webhook for a token the provider never issued: recorded, fetched back, dropped.
    const hook = await fetch(`${apiUrl}/webhooks/sandbox`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: WEBHOOK_TOKEN }),
    });
    expect(hook.status).toBe(200);
    await until(
      'the unknown webhook token to be processed',
      async () =>
        worker.output.some((l) => l.includes('provider does not know this webhook token')) || undefined,
    );
  }, 90_000);

  it('keep the PIX key out of Temporal: history holds ciphertext, the codec endpoint decrypts it', async () => {
    const execution = { workflowId: payoutWorkflowId(payout.id) };
    const { history } = await stack.temporal.workflowService.getWorkflowExecutionHistory({
      namespace: 'default',
      execution,
    });
    const raw = Buffer.from(temporal.api.history.v1.History.encode(history!).finish());
    expect(raw.includes(Buffer.from(CPF))).toBe(false);
    expect(raw.includes(Buffer.from('pixKey'))).toBe(false);
    expect(raw.includes(Buffer.from(Buffer.from(`"${CPF}"`).toString('base64')))).toBe(false);

    const started = history!.events![0]!.workflowExecutionStartedEventAttributes!;
    const input = started.input!.payloads!;
    expect(Buffer.from(input[0]!.metadata!.encoding!).toString()).toBe('binary/encrypted');
    const memo = started.memo!.fields!;
    expect(Buffer.from(memo.amountBrl!.metadata!.encoding!).toString()).toBe('binary/encrypted');
    // Search attributes stay in clear: they are what an operator filters by.
    expect(Buffer.from(started.searchAttributes!.indexedFields!.PartnerId!.data!).toString()).toBe(
      `"${partnerId}"`,
    );

    const body = JSON.stringify({
      payloads: input.map((p) => ({
        metadata: Object.fromEntries(
          Object.entries(p.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
        ),
        data: Buffer.from(p.data!).toString('base64'),
      })),
    });
    const decode = (authorization?: string) =>
      fetch(`${codecUrl}/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body,
      });
    expect((await decode()).status).toBe(401);
    const decoded = (await (await decode(`Bearer ${CODEC_TOKEN}`)).json()) as {
      payloads: { data: string }[];
    };
    expect(JSON.parse(Buffer.from(decoded.payloads[0]!.data, 'base64').toString())).toMatchObject({
      payoutId: payout.id,
      pixKey: CPF,
      pixKeyType: 'CPF',
    });

    // A client with the key reads the memo; the Web UI does so through the codec endpoint.
    const described = await stack.temporal.workflow.getHandle(execution.workflowId).describe();
    expect(await described.memo).toEqual({ amountBrl: '100.00', wallet: '0x7099…79C8' });
  });

  it('let an operator find the payout by PayoutStatus and PartnerId', async () => {
    const query = `PayoutStatus = "COMPLETED" AND PartnerId = "${partnerId}"`;
    const found = await until(
      'visibility',
      async () => {
        const ids: string[] = [];
        for await (const wf of stack.temporal.workflow.list({ query })) ids.push(wf.workflowId);
        return ids.length > 0 ? ids : undefined;
      },
      { timeoutMs: 20_000 },
    );
    expect(found).toEqual([payoutWorkflowId(payout.id)]);
  });

  it('expose in Prometheus format every metric the alert rules use', async () => {
    // A workflow type no worker knows fails its workflow task: the Temporal SDK's failure counter
    // (behind the WorkflowTaskFailures alert) only appears once something has failed.
    const broken = await stack.temporal.workflow.start('noSuchWorkflow', {
      taskQueue: stack.config.TEMPORAL_TASK_QUEUE,
      workflowId: `ops-broken-${randomUUID()}`,
    });
    const workerText = await until('the workflow task failure metric', async () => {
      const text = await (await fetch(workerMetricsUrl)).text();
      return text.includes('temporal_workflow_task_execution_failed') ? text : undefined;
    });
    await broken.terminate('test done');
    const apiRes = await fetch(apiMetricsUrl);
    expect(apiRes.headers.get('content-type')).toMatch(/^text\/plain/);
    const apiText = await apiRes.text();

    expect(apiText).toMatch(
      /http_request_duration_seconds_count\{method="POST",route="\/v1\/payouts",status_code="201"\} 1/,
    );
    expect(apiText).toMatch(
      /http_request_duration_seconds_bucket\{le="[^"]+",method="GET",route="\/v1\/payouts\/:id",status_code="200"\}/,
    );
    expect(apiText).toMatch(/webhook_deliveries_total\{provider="sandbox",outcome="received"\} 1/);
    // The gauges read this test's own database: its one payout has ended, nothing is open.
    expect(apiText).toMatch(/^payouts_open\{status="PENDING"\} 0$/m);
    expect(apiText).toMatch(/^payouts_open\{status="PROCESSING"\} 0$/m);
    expect(apiText).toMatch(/^payouts_open_oldest_age_seconds\{status="PROCESSING"\} 0$/m);
    expect(apiText).toMatch(/provider_call_duration_seconds_count\{operation="getQuote",outcome="ok"\}/);
    expect(workerText).toMatch(/payout_transitions_total\{status="COMPLETED"\} 1/);
    // The api created the payout's charge before starting its workflow (D81); the worker did not.
    expect(apiText).toMatch(
      /provider_call_duration_seconds_count\{operation="createCharge",outcome="ok"\} 1/,
    );
    expect(apiText).toMatch(/payout_charge_paths_total\{path="api"\} 1/);
    expect(workerText).not.toMatch(/operation="createCharge"/);
    expect(workerText).toMatch(/^temporal_workflow_task_schedule_to_start_latency_bucket\{/m);

    // Counters alerted on with increase() have every label value's series from the start, at 0, on
    // the process that counts them.
    expect(workerText).toMatch(/^payout_refund_cases_opened_total\{kind="wrong_amount"\} 0$/m);
    expect(workerText).toMatch(/^payout_transfer_claim_conflicts_total 0$/m);
    expect(workerText).toMatch(/^payout_treasury_insufficient_funds_total 0$/m);
    expect(workerText).toMatch(/^payout_treasury_cannot_send_total\{reason="blocked_by_issuer"\} 0$/m);
    expect(workerText).toMatch(/^payout_treasury_nonce_gaps_total 0$/m);
    // Read from the chain at scrape time: this stack's treasury can send.
    expect(workerText).toMatch(/^treasury_can_send\{address="0x[0-9a-fA-F]{40}",reason="none"\} 1$/m);
    expect(apiText).toMatch(/^webhook_deliveries_total\{provider="sandbox",outcome="failed"\} 0$/m);

    // Read from the chain at scrape time: the stack's two test feeds, fresh.
    const treasuryApiText = await (await fetch(treasuryApiMetricsUrl)).text();
    expect(treasuryApiText).toMatch(
      /^price_feed_readable\{feed="usdt_usd",address="0x[0-9a-fA-F]{40}"\} 1$/m,
    );
    expect(treasuryApiText).toMatch(
      /^price_feed_age_seconds\{feed="brl_usd",address="0x[0-9a-fA-F]{40}"\} \d+$/m,
    );

    const exposed = new Set([
      ...sampledMetricNames(apiText),
      ...sampledMetricNames(workerText),
      ...sampledMetricNames(treasuryApiText),
    ]);
    const families = new Set([...exposed].flatMap((n) => [n, n.replace(/_(?:bucket|count|sum)$/, '')]));
    const rules = (
      parse(readFileSync(path.join(ROOT, 'ops/alerts.yml'), 'utf8')) as {
        groups: {
          name: string;
          rules: {
            alert: string;
            expr: string;
            labels: Record<string, string>;
            annotations: Record<string, string>;
          }[];
        }[];
      }
    ).groups.flatMap((g) => g.rules);
    expect(rules.length).toBeGreaterThanOrEqual(8);
    const used = new Set<string>();
    for (const rule of rules) {
      expect({
        alert: rule.alert,
        severity: rule.labels?.severity,
        summary: typeof rule.annotations?.summary,
      }).toEqual({
        alert: expect.stringMatching(/^[A-Z]\w+$/),
        severity: expect.stringMatching(/^(critical|warning)$/),
        summary: 'string',
      });
      for (const name of selectedMetrics(rule.expr)) {
        used.add(name);
        // `up` is written by Prometheus itself for every scrape target.
        if (name !== 'up')
          expect({ alert: rule.alert, name, exposed: exposed.has(name) || families.has(name) }).toMatchObject(
            { exposed: true },
          );
      }
    }
    // The alerts the service promises (docs/operations.md): below minimum, stuck, webhooks.
    expect([...used]).toEqual(
      expect.arrayContaining([
        'payout_settlement_below_minimum_total',
        'payouts_open_oldest_age_seconds',
        'webhook_deliveries_total',
        'temporal_workflow_task_execution_failed',
      ]),
    );
    expect(
      selectedMetrics('histogram_quantile(0.9, sum by (le) (rate(a_bucket{x="y"}[5m]))) > on(job) b or c'),
    ).toEqual(['a_bucket', 'b', 'c']);
  }, 90_000);

  it('log JSON with request and payout ids, and never a secret', async () => {
    // The worker's log line for the failed workflow task can trail the metric by a moment.
    await until('the worker to log the failed workflow task', async () =>
      worker.output.some((l) => l.includes('Failed to process Workflow Activation')) ? true : undefined,
    );
    const parsed = (lines: string[]) =>
      lines.map((line) => {
        try {
          return JSON.parse(line) as Record<string, unknown>;
        } catch {
          throw new Error(`not a JSON log line: ${line}`);
        }
      });
    const apiLogs = parsed(api.output);
    const workerLogs = parsed(worker.output);

    expect(apiLogs).toContainEqual(
      expect.objectContaining({ reqId: REQUEST_ID, payoutId: payout.id, msg: 'request completed' }),
    );
    expect(workerLogs).toContainEqual(
      expect.objectContaining({ payoutId: payout.id, status: 'COMPLETED', msg: 'payout recorded' }),
    );
    // The Temporal SDK's own logs arrive through the same logger, with the workflow they concern.
    expect(workerLogs).toContainEqual(
      expect.objectContaining({
        service: 'payout-worker',
        workflowId: payoutWorkflowId(payout.id),
        sdkComponent: expect.any(String),
      }),
    );
    // An SDK error arrives serialised, not as `{}`.
    expect(workerLogs).toContainEqual(
      expect.objectContaining({
        msg: 'Failed to process Workflow Activation',
        error: expect.objectContaining({ message: expect.stringContaining('noSuchWorkflow') }),
      }),
    );

    const secrets: Record<string, string> = {
      'partner API key': apiKey,
      'PIX key (CPF)': CPF,
      'webhook token': WEBHOOK_TOKEN,
      'treasury private key': stack.config.TREASURY_PRIVATE_KEY!.slice(2),
      'payload encryption key': stack.config.PAYLOAD_ENCRYPTION_KEY!,
      'codec token': CODEC_TOKEN,
    };
    const output = [...api.output, ...worker.output].join('\n');
    expect(output.length).toBeGreaterThan(10_000);
    for (const [what, secret] of Object.entries(secrets)) {
      expect({ what, leaked: output.includes(secret) }).toEqual({ what, leaked: false });
    }
  });
});
