import { randomUUID } from 'node:crypto';
import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { Client } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { startTracing } from '../../src/observability/tracing';
import { TRACING_WORKFLOW_INTERCEPTORS, tracingSinks } from '../../src/temporal/tracing';
import { createTimeSkippingEnv } from '../support/temporal';

// The workflow side of tracing (src/temporal/workflow-tracing-interceptors.ts): a workflow whose start
// carried a trace context is traced into it; one started without any makes no workflow span at all,
// so an untraced service pays nothing for the interceptors in its bundle.
const exporter = new InMemorySpanExporter();
const tracing = startTracing({ serviceName: 'gate-test', exporter })!;

describe('workflow tracing only for traced starts', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await createTimeSkippingEnv();
  }, 120_000);
  afterAll(async () => {
    await env?.teardown();
    await tracing.shutdown();
  });

  it('spans the run and its activity of a traced start, and none of an untraced one', async () => {
    const taskQueue = `gate-${randomUUID()}`;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('./fixtures/traced.workflow'),
      activities: { step: async () => 'done' },
      interceptors: { workflowModules: [TRACING_WORKFLOW_INTERCEPTORS] },
      sinks: tracingSinks(tracing),
    });
    const traced = new Client({
      connection: env.connection,
      interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor({ tracer: tracing.tracer })] },
    });
    const tracedId = `traced-${randomUUID()}`;
    const untracedId = `untraced-${randomUUID()}`;
    await worker.runUntil(async () => {
      const root = tracing.tracer.startSpan('partner call');
      await context.with(trace.setSpan(context.active(), root), () =>
        traced.workflow.execute('tracedWorkflow', { taskQueue, workflowId: tracedId }),
      );
      root.end();
      await env.client.workflow.execute('tracedWorkflow', { taskQueue, workflowId: untracedId });
    });
    await tracing.spanProcessor.forceFlush();
    const runs = exporter.getFinishedSpans().filter((s) => s.name === 'RunWorkflow:tracedWorkflow');
    // One run span only: the traced start's, in the partner call's trace.
    expect(runs).toHaveLength(1);
    expect(runs[0]!.spanContext().traceId).toBe(root(exporter)?.spanContext().traceId);
    expect(exporter.getFinishedSpans().filter((s) => s.name === 'StartActivity:step')).toHaveLength(1);

    // The gate reads the start's headers, which history keeps: a worker replaying either history (a
    // cache eviction, a restart) takes the same side of it, and commands match (no nondeterminism).
    const spansBefore = exporter.getFinishedSpans().length;
    for (const id of [tracedId, untracedId]) {
      const history = await env.client.workflow.getHandle(id).fetchHistory();
      await Worker.runReplayHistory(
        {
          workflowsPath: require.resolve('./fixtures/traced.workflow'),
          interceptors: { workflowModules: [TRACING_WORKFLOW_INTERCEPTORS] },
          sinks: tracingSinks(tracing),
        },
        history,
        id,
      );
    }
    await tracing.spanProcessor.forceFlush();
    // A replay exports nothing a second time.
    expect(exporter.getFinishedSpans()).toHaveLength(spansBefore);
  });
});

function root(e: InMemorySpanExporter) {
  return e.getFinishedSpans().find((s) => s.name === 'partner call');
}
