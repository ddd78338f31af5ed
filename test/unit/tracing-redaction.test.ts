import { context, propagation, SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { startTracing } from '../../src/observability/tracing';

// What the Temporal OpenTelemetry interceptors record of a failed call (span.recordException(err),
// span.setStatus({ message })) leaves with its URLs redacted, as log lines do; and only the W3C
// trace context is propagated, no baggage (docs/decisions.md D61). Spans collected by an in-memory
// exporter behind the same wrapper as the OTLP one.
const exporter = new InMemorySpanExporter();
const tracing = startTracing({ serviceName: 'redaction-test', exporter })!;

afterAll(async () => {
  await tracing.shutdown();
  trace.disable();
  propagation.disable();
  context.disable();
});

const KEY = 'sk_live_9f8e7d6c5b4a';
const URL_WITH_KEY = `https://arb-mainnet.g.alchemy.com/v2/${KEY}`;

it('redacts URLs in status messages and exception events before export', () => {
  const span = tracing.tracer.startSpan('RunActivity:verifyUsdtTransfer');
  const err = new Error(`request to ${URL_WITH_KEY} failed: ECONNRESET`);
  span.recordException(err);
  span.addEvent('retry', { 'callback.urls': [`https://partner.example/hook?token=${KEY}`, 'plain'] });
  span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
  span.end();

  const [exported] = exporter.getFinishedSpans();
  expect(exported!.name).toBe('RunActivity:verifyUsdtTransfer');
  expect(exported!.spanContext().spanId).toBe(span.spanContext().spanId);
  expect(JSON.stringify([exported!.status, exported!.events])).not.toContain(KEY);
  expect(exported!.status).toEqual({
    code: SpanStatusCode.ERROR,
    message: 'request to https://arb-mainnet.g.alchemy.com/[redacted] failed: ECONNRESET',
  });
  const exception = exported!.events.find((e) => e.name === 'exception')!;
  expect(exception.attributes!['exception.message']).toBe(
    'request to https://arb-mainnet.g.alchemy.com/[redacted] failed: ECONNRESET',
  );
  expect(exception.attributes!['exception.stacktrace']).toContain(
    'https://arb-mainnet.g.alchemy.com/[redacted]',
  );
  expect(exception.attributes!['exception.type']).toBe('Error');
  expect(exported!.events.find((e) => e.name === 'retry')!.attributes!['callback.urls']).toEqual([
    'https://partner.example/[redacted]',
    'plain',
  ]);
});

it('propagates the trace context and no baggage', () => {
  const span = tracing.tracer.startSpan('POST /v1/payouts');
  const withBaggage = propagation.setBaggage(
    trace.setSpan(context.active(), span),
    propagation.createBaggage({ partner: { value: 'chosen-by-the-partner' } }),
  );
  const headers: Record<string, string> = {};
  propagation.inject(withBaggage, headers);
  span.end();
  expect(Object.keys(headers)).toEqual(['traceparent']);
  expect(headers.traceparent).toContain(span.spanContext().traceId);
});
