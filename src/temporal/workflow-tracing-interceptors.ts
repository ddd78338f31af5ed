/**
 * The workflow side of tracing (docs/decisions.md D61), in the workflow bundle: Temporal's
 * OpenTelemetry workflow interceptors, for a workflow whose start carried a trace context only.
 *
 * The api puts that context in a start's headers when tracing is on (tracing.ts); without it there is
 * nothing to continue, and the interceptors would still cost every workflow: their context manager is
 * an AsyncLocalStorage every promise of the sandbox propagates, and every activation of every workflow
 * (a live GET's query included) would make a span for a sink that drops it. So they are loaded and
 * made for a traced workflow only, and an untraced workflow never reaches them. A traced workflow's
 * commands carry the trace in their headers; replay compares commands, not headers, and `traced` is
 * read from the start in history, so a replay takes the same branch.
 */
import type {
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import type * as OpenTelemetryWorkflowInterceptors from '@temporalio/interceptors-opentelemetry/lib/workflow-interceptors';

/**
 * Loaded on the first traced call only: each workflow has its own module cache in the sandbox, so an
 * untraced workflow never evaluates OpenTelemetry (nor the globals its runtime patch sets).
 */
function openTelemetryInterceptors(): WorkflowInterceptors {
  const otel =
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors') as typeof OpenTelemetryWorkflowInterceptors;
  return otel.interceptors();
}

/** Where @temporalio/interceptors-opentelemetry carries the trace context in headers. */
export const TRACE_HEADER = '_tracer-data';

type Inbound = Required<
  Pick<
    WorkflowInboundCallsInterceptor,
    'execute' | 'handleSignal' | 'handleUpdate' | 'validateUpdate' | 'handleQuery'
  >
>;
type Outbound = Required<
  Pick<
    WorkflowOutboundCallsInterceptor,
    | 'scheduleActivity'
    | 'scheduleLocalActivity'
    | 'startChildWorkflowExecution'
    | 'continueAsNew'
    | 'signalWorkflow'
    | 'getLogAttributes'
  >
>;

export const interceptors = (): WorkflowInterceptors => {
  let traced = false;
  let made: WorkflowInterceptors | undefined;
  const otel = () => (made ??= openTelemetryInterceptors());
  const inbound = () => otel().inbound![0] as Inbound;
  const outbound = () => otel().outbound![0] as Outbound;
  const hasTrace = (headers: Record<string, unknown>) => headers[TRACE_HEADER] !== undefined;

  return {
    inbound: [
      {
        execute: (input, next) => {
          traced = hasTrace(input.headers);
          return traced ? inbound().execute(input, next) : next(input);
        },
        handleSignal: (input, next) => (traced ? inbound().handleSignal(input, next) : next(input)),
        handleUpdate: (input, next) => (traced ? inbound().handleUpdate(input, next) : next(input)),
        validateUpdate: (input, next) => (traced ? inbound().validateUpdate(input, next) : next(input)),
        // A query is traced when it carries a trace of its own (a partner's GET, traced by the api).
        handleQuery: (input, next) =>
          traced && hasTrace(input.headers) ? inbound().handleQuery(input, next) : next(input),
      },
    ],
    outbound: [
      {
        scheduleActivity: (input, next) => (traced ? outbound().scheduleActivity(input, next) : next(input)),
        scheduleLocalActivity: (input, next) =>
          traced ? outbound().scheduleLocalActivity(input, next) : next(input),
        startChildWorkflowExecution: (input, next) =>
          traced ? outbound().startChildWorkflowExecution(input, next) : next(input),
        continueAsNew: (input, next) => (traced ? outbound().continueAsNew(input, next) : next(input)),
        signalWorkflow: (input, next) => (traced ? outbound().signalWorkflow(input, next) : next(input)),
        getLogAttributes: (input, next) => (traced ? outbound().getLogAttributes(input, next) : next(input)),
      },
    ],
    internals: [
      {
        // The start's headers, before any job of the first activation: a signal or update delivered
        // with the start is handled before the workflow function (and `execute`) runs.
        activate: (input, next) => {
          const start = input.activation.jobs?.[0]?.initializeWorkflow;
          if (start) traced = hasTrace(start.headers ?? {});
          return next(input);
        },
        dispose: (input, next) => {
          const internals = made?.internals?.[0];
          if (internals?.dispose) internals.dispose(input, next);
          else next(input);
        },
      },
    ],
  };
};
