import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
  type Attributes,
  type AttributeValue,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { redactUrls } from '../domain/url-redaction';

/**
 * OpenTelemetry tracing (docs/decisions.md D61): one trace per payout, from the partner's POST
 * through the workflow to its activities. On only when an exporter is configured
 * (OTEL_EXPORTER_OTLP_ENDPOINT, or a test's in-memory exporter); off, nothing is registered: no
 * provider, no request hooks, no client or activity interceptors, no exporter.
 */
export interface Tracing {
  tracer: Tracer;
  resource: Resource;
  spanProcessor: SpanProcessor;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

export function startTracing(opts: {
  serviceName: string;
  /** OTLP/HTTP base URL (`http://jaeger:4318`): spans go to <endpoint>/v1/traces in batches. */
  otlpEndpoint?: string;
  /** Tests: spans go here one by one as they end. */
  exporter?: SpanExporter;
}): Tracing | undefined {
  if (!opts.otlpEndpoint && !opts.exporter) return undefined;
  const resource = new Resource({ 'service.name': opts.serviceName });
  const spanProcessor = opts.exporter
    ? new SimpleSpanProcessor(new RedactingExporter(opts.exporter))
    : new BatchSpanProcessor(
        new RedactingExporter(
          new OTLPTraceExporter({ url: `${opts.otlpEndpoint!.replace(/\/+$/, '')}/v1/traces` }),
        ),
      );
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  // Global: the Temporal interceptors take the global tracer; also sets the async context manager
  // that carries the active span across awaits. The W3C trace context only, no baggage: the client
  // interceptor writes what the propagator injects into workflow headers, which are not encrypted,
  // and a partner's baggage (whatever it chose to send) has no business there.
  provider.register({ propagator: new W3CTraceContextPropagator() });
  return {
    tracer: provider.getTracer(opts.serviceName),
    resource,
    spanProcessor,
    shutdown: () => provider.shutdown(),
  };
}

/**
 * Spans leave with their URLs redacted, as log lines do (url-redaction.ts): the Temporal
 * interceptors record a failed call's error on its span (status message, exception event with
 * message and stack), and an error's message often holds the URL it called, key included. Wraps
 * the exporter, not the tracer, so the workflow's spans (which come through the sink) are covered.
 */
class RedactingExporter implements SpanExporter {
  constructor(private readonly inner: SpanExporter) {}

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    this.inner.export(spans.map(redactedSpan), resultCallback);
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

function redactedSpan(span: ReadableSpan): ReadableSpan {
  // A view of the span with two fields of its own: the span (the SDK's, or the workflow sink's plain
  // object) stays as it was, and everything else is read through to it.
  return Object.create(span, {
    status: {
      value:
        span.status.message === undefined
          ? span.status
          : { ...span.status, message: redactUrls(span.status.message) },
      enumerable: true,
    },
    events: {
      value: span.events.map((event) =>
        event.attributes ? { ...event, attributes: redactedAttributes(event.attributes) } : event,
      ),
      enumerable: true,
    },
  }) as ReadableSpan;
}

function redactedAttributes(attributes: Attributes): Attributes {
  const redact = (value: AttributeValue | undefined): AttributeValue | undefined => {
    if (typeof value === 'string') return redactUrls(value);
    if (Array.isArray(value))
      return value.map((item: unknown) =>
        typeof item === 'string' ? redactUrls(item) : item,
      ) as AttributeValue;
    return value;
  };
  return Object.fromEntries(Object.entries(attributes).map(([key, value]) => [key, redact(value)]));
}

const SPAN = Symbol('request span');

/**
 * A server span per request (`POST /v1/payouts`), child of the caller's traceparent when it sends
 * one, active while the route runs: what the route starts in Temporal joins the request's trace.
 */
export function traceRequests(app: FastifyInstance, tracer: Tracer): void {
  const spanOf = (request: FastifyRequest) => (request as unknown as Record<symbol, Span | undefined>)[SPAN];
  app.addHook('onRequest', (request, _reply, done) => {
    const parent = propagation.extract(ROOT_CONTEXT, request.headers);
    const route = request.routeOptions.url ?? 'unmatched';
    const span = tracer.startSpan(
      `${request.method} ${route}`,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': request.method, 'http.route': route },
      },
      parent,
    );
    (request as unknown as Record<symbol, Span>)[SPAN] = span;
    done();
  });
  // Entered again once the body is parsed (stream events run in the socket's context, not ours):
  // the handler runs inside the request span.
  app.addHook('preHandler', (request, _reply, done) => {
    const span = spanOf(request);
    if (!span) return done();
    context.with(trace.setSpan(context.active(), span), done);
  });
  app.addHook('onResponse', async (request, reply) => {
    const span = spanOf(request);
    if (!span) return;
    span.setAttribute('http.response.status_code', reply.statusCode);
    if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
}
