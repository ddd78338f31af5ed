import type { ClientInterceptors } from '@temporalio/client';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import type { Tracing } from '../observability/tracing';

/**
 * Temporal's OpenTelemetry interceptors (@temporalio/interceptors-opentelemetry): the api's client
 * puts the active span's context in the headers of what it starts, the workflow continues it (its
 * spans leave the sandbox through the `exporter` sink) and hands it to its activities, whose spans
 * follow. One trace from the partner's POST to the last activity.
 */

/**
 * In the workflow bundle always (it is built once, for every setting): Temporal's workflow
 * interceptors, made only for workflows started with a trace context (workflow-tracing-interceptors.ts).
 */
export const TRACING_WORKFLOW_INTERCEPTORS = require.resolve('./workflow-tracing-interceptors');

export function tracingClientInterceptors(tracing?: Tracing): ClientInterceptors {
  return tracing
    ? { workflow: [new OpenTelemetryWorkflowClientInterceptor({ tracer: tracing.tracer })] }
    : {};
}

export function tracingActivityInterceptors(tracing?: Tracing): ActivityInterceptorsFactory[] {
  if (!tracing) return [];
  return [
    (ctx) => ({
      inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer: tracing.tracer }),
      outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
    }),
  ];
}

/** The sink the workflow interceptors export through; with tracing off it drops what it is given. */
export function tracingSinks(tracing?: Tracing): InjectedSinks<OpenTelemetrySinks> {
  return {
    exporter: tracing
      ? makeWorkflowExporter(tracing.spanProcessor, tracing.resource)
      : { export: { fn: () => {}, callDuringReplay: false } },
  };
}
