import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { FastifyInstance, FastifyRequest } from 'fastify';

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
    ? new SimpleSpanProcessor(opts.exporter)
    : new BatchSpanProcessor(
        new OTLPTraceExporter({ url: `${opts.otlpEndpoint!.replace(/\/+$/, '')}/v1/traces` }),
      );
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  // Global: the Temporal interceptors take the global tracer; also sets the W3C propagator and the
  // async context manager that carries the active span across awaits.
  provider.register();
  return {
    tracer: provider.getTracer(opts.serviceName),
    resource,
    spanProcessor,
    shutdown: () => provider.shutdown(),
  };
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
