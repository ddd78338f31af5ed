import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { startTracing } from '../../src/observability/tracing';
import { useStack, VALID_PAYOUT } from '../support/stack';
import { until } from '../support/until';

// One payout's trace (docs/operations.md "Tracing"): the partner's POST, the api's update-with-start,
// the payout workflow and its activities, all with one trace id, on real servers (Temporal dev
// server, PostgreSQL, anvil, the provider sandbox), spans collected by an in-memory exporter.
const exporter = new InMemorySpanExporter();
const tracing = startTracing({ serviceName: 'payouts-test', exporter })!;

describe('tracing one payout', () => {
  const stack = useStack({ tracing });
  afterAll(() => tracing.shutdown());

  it('runs from POST /v1/payouts through the workflow to the activities in one trace', async () => {
    const { apiKey } = await stack.createPartner('tracing');
    const res = await fetch(`${stack.apiUrl}/v1/payouts`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': apiKey,
        // A partner that traces its own call: the payout's trace continues it.
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      },
      body: JSON.stringify(VALID_PAYOUT),
    });
    expect(res.status).toBe(201);
    const payout = (await res.json()) as { id: string; pix_copy_paste: string };
    await stack.pay(payout.pix_copy_paste);
    await stack.waitForStatus(apiKey, payout.id, ['COMPLETED']);

    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const names = (spans: ReadableSpan[]) => spans.map((s) => s.name);
    const inTrace = () => exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    const spans = await until(
      'the workflow run and its settlement activities to be traced',
      () => {
        const found = inTrace();
        const seen = names(found);
        return seen.includes('RunWorkflow:payoutWorkflow') && seen.includes('RunActivity:verifyUsdtTransfer')
          ? found
          : undefined;
      },
      { timeoutMs: 30_000 },
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}; spans in the trace: ${names(inTrace()).join(', ')}`);
    });

    const list = names(spans);
    expect(list).toContain('POST /v1/payouts');
    expect(list.some((n) => /UpdateWithStart|StartWorkflow/.test(n))).toBe(true);
    expect(list).toContain('RunWorkflow:payoutWorkflow');
    expect(list.some((n) => n.startsWith('StartActivity:'))).toBe(true);
    expect(list.filter((n) => n.startsWith('RunActivity:')).length).toBeGreaterThanOrEqual(2);
    // The request span is the root within the service, child of the partner's span.
    const request = spans.find((s) => s.name === 'POST /v1/payouts')!;
    expect(request.parentSpanId).toBe('00f067aa0ba902b7');
    expect(request.attributes['http.response.status_code']).toBe(201);
    // Nothing of the payout's personal data in span attributes.
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain(VALID_PAYOUT.pix_key);
  });
});
