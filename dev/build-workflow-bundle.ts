import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_FILE, workflowBundleOptions } from '../src/workflow-bundle';

/**
 * `npm run build`'s second step: the workflow code bundled once, at build time, as Temporal's
 * production sample does. The worker then loads it (`workflowBundle: { codePath }`) instead of
 * running webpack on every start, and every replica runs byte-identical workflow code.
 * Runs from dist/ after tsc, so it bundles the compiled workflows the image ships.
 */
async function main(): Promise<void> {
  const { code } = await bundleWorkflowCode(workflowBundleOptions());
  const out = path.resolve(__dirname, '..', WORKFLOW_BUNDLE_FILE);
  await writeFile(out, code);
  process.stdout.write(`workflow bundle: ${path.relative(process.cwd(), out)} (${code.length} bytes)\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`workflow bundle failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
