import { z } from 'zod';
import {
  DEFAULT_AUTO_RETURN_KINDS,
  NEVER_AUTO_RETURN_KINDS,
  REFUND_KINDS,
  type RefundKind,
} from '../domain/refund';
import { BUILD_ID_PATTERN } from '../temporal/worker-versioning';
import { bool, int, optional } from './values';

/** The worker's own: its workflow bundle and versioning, its cache and shutdown, the refund policy. */

export const WORKER_VARIABLES = {
  WORKER_METRICS_PORT: int(9465),
  // A workflow bundle built ahead (bundleWorkflowCode's code written to a file): the worker starts
  // without running webpack, and every replica runs the same code. Default: dist/workflow-bundle.js
  // when running compiled, else the sources.
  WORKFLOW_BUNDLE_PATH: optional(z.string()),
  // Worker Versioning (src/temporal/worker-versioning.ts, docs/workflow-changes.md). A build id turns
  // it on: the worker polls as version <deployment>:<build id> and every workflow it starts stays on
  // that build. One build id per workflow bundle that ships (the image tag or git sha); empty, the
  // worker is unversioned and any worker may replay any history (patched() is then the only guard).
  // The server refuses ':' and '.' in deployment names.
  TEMPORAL_WORKER_DEPLOYMENT_NAME: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,200}$/, 'must be 1-200 letters, digits, _ or -')
    .default('pix-usdt-payouts'),
  TEMPORAL_WORKER_BUILD_ID: optional(
    z.string().regex(BUILD_ID_PATTERN, 'must be 1-200 letters, digits, ., _, + or -'),
  ),
  // The worker makes its own build the current version once it polls: for a single worker (local
  // stack, compose demo). A fleet promotes with `admin deploy promote` after the new build is up,
  // never this: every restarting replica of an older build would take new payouts back.
  TEMPORAL_WORKER_SET_CURRENT: bool(false),
  // Workflows the worker keeps in memory between tasks (its sticky cache). A cached workflow answers
  // a query or takes its next event without replaying its history; an evicted one is replayed on its
  // next task. Measured here at about 0.8 MiB of worker RSS per cached payout workflow, so 1000 keeps
  // a worker under 1 GiB however many payouts are open (docs/BENCHMARKS.md). 0 disables the cache.
  WORKER_MAX_CACHED_WORKFLOWS: int(1000, 0),
  // The Web UI's "Stack Trace" tab of a workflow (its __stack_trace query). On, the SDK captures a
  // stack for every promise a workflow creates, about a third of the workflow thread's CPU measured
  // here (docs/decisions.md D82): turn it on for a worker while a stuck workflow is being examined.
  WORKER_WORKFLOW_STACK_TRACES: bool(false),
  // On SIGTERM the worker stops polling and lets running activity attempts finish for this long
  // before cancelling them: the longest attempt a workflow allows (startToCloseTimeout) is 60 s.
  // A container's stop grace period must be longer (docker-compose.yml: stop_grace_period).
  WORKER_SHUTDOWN_GRACE_SECONDS: int(60, 0),
  // The refund policy (docs/decisions.md D63): the refund kinds whose payment goes back to the payer
  // at once, comma-separated; every other kind waits for `admin refunds approve`. "none": all wait.
  REFUND_AUTO_RETURN_KINDS: z.preprocess(
    (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
    z
      .string()
      .default(DEFAULT_AUTO_RETURN_KINDS.join(','))
      .transform((v, ctx) => {
        const list = v.split(',').map((s) => s.trim());
        if (list.length === 1 && list[0] === 'none') return [] as RefundKind[];
        const unknown = list.filter((s) => !(REFUND_KINDS as readonly string[]).includes(s));
        if (unknown.length > 0) {
          ctx.addIssue({
            code: 'custom',
            message: `unknown refund kind(s) "${unknown.join('", "')}": list ${REFUND_KINDS.join(', ')}, or none alone`,
          });
          return z.NEVER;
        }
        const refused = list.filter((s) => (NEVER_AUTO_RETURN_KINDS as readonly string[]).includes(s));
        if (refused.length > 0) {
          ctx.addIssue({
            code: 'custom',
            message: `"${refused.join('", "')}" cannot return without an operator: the payment may still settle its payout`,
          });
          return z.NEVER;
        }
        return [...new Set(list)] as RefundKind[];
      }),
  ),
};
