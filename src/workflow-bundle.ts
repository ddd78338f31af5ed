import { existsSync } from 'node:fs';
import path from 'node:path';
import { FAILURE_CONVERTER_PATH } from './temporal/data-converter';
import { TRACING_WORKFLOW_INTERCEPTORS } from './temporal/tracing';

/** The prebuilt workflow bundle's name, beside the compiled `src/` in dist/ (`npm run build`). */
export const WORKFLOW_BUNDLE_FILE = 'workflow-bundle.js';

/**
 * What goes into the workflow bundle besides the workflows, wherever it is built (npm run build,
 * tests, a worker running from sources): the failure converter that encodes failures inside the
 * sandbox, where workflow code fails, and the OpenTelemetry workflow interceptors (tracing.ts).
 */
export function workflowBundleOptions(): {
  workflowsPath: string;
  failureConverterPath: string;
  workflowInterceptorModules: string[];
} {
  return {
    workflowsPath: require.resolve('./workflows'),
    failureConverterPath: FAILURE_CONVERTER_PATH,
    workflowInterceptorModules: [TRACING_WORKFLOW_INTERCEPTORS],
  };
}

/**
 * Where the worker takes its workflow code from: the bundle `npm run build` wrote next to the
 * compiled sources (dist/workflow-bundle.js), or, when running from TypeScript sources (tsx, tests),
 * the workflows module itself, bundled by the SDK at start.
 */
export function workflowSource(): { workflowBundle: { codePath: string } } | { workflowsPath: string } {
  const codePath = path.resolve(__dirname, '..', WORKFLOW_BUNDLE_FILE);
  // Only a compiled worker uses the bundle: a stale dist/ must never shadow the sources under tsx.
  if (__filename.endsWith('.js') && existsSync(codePath)) return { workflowBundle: { codePath } };
  return { workflowsPath: workflowBundleOptions().workflowsPath };
}
