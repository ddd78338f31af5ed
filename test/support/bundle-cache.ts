import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode, type BundleOptions, type WorkflowBundleWithSourceMap } from '@temporalio/worker';

const ROOT = path.resolve(__dirname, '../..');
const CACHE = path.join(ROOT, 'node_modules/.cache/payouts-test-workflow-bundles');

/**
 * `bundleWorkflowCode(options)`, built once for every test file and jest worker of a run rather than
 * by each (webpack takes seconds per build). A bundle is kept under node_modules/.cache, named by a
 * hash of what can change it: every file under src/, package-lock.json (the SDK and webpack that
 * build it), the options, and the content of any module they name outside src/. Any change is
 * bundled again; an unchanged one is read back (written aside, then renamed into place).
 */
export async function cachedWorkflowBundle(
  options: Omit<BundleOptions, 'logger'> & { workflowsPath: string },
): Promise<WorkflowBundleWithSourceMap> {
  const hash = createHash('sha256');
  const srcFiles = (await readdir(path.join(ROOT, 'src'), { recursive: true }))
    .map((f) => path.join('src', f))
    .sort();
  for (const file of srcFiles) {
    const abs = path.join(ROOT, file);
    if (!(await stat(abs)).isFile()) continue;
    const content = await readFile(abs);
    hash.update(`${file}\0${content.length}\0`).update(content);
  }
  hash.update(await readFile(path.join(ROOT, 'package-lock.json')));
  hash.update(JSON.stringify(options));
  const modules = [
    options.workflowsPath,
    options.failureConverterPath,
    options.payloadConverterPath,
    ...(options.workflowInterceptorModules ?? []),
  ].filter((m): m is string => m !== undefined);
  for (const m of modules) {
    if (path.relative(path.join(ROOT, 'src'), m).startsWith('..')) hash.update(await readFile(m));
  }
  const out = path.join(CACHE, `${hash.digest('hex').slice(0, 32)}.js`);
  if (existsSync(out)) return { code: await readFile(out, 'utf8'), sourceMap: '' };

  const silent = () => {};
  const bundle = await bundleWorkflowCode({
    ...options,
    logger: { log: silent, trace: silent, debug: silent, info: silent, warn: silent, error: silent },
  });
  await mkdir(CACHE, { recursive: true });
  await pruneOlderBundles();
  const staging = path.join(CACHE, `staging-${process.pid}-${randomUUID()}`);
  await writeFile(staging, bundle.code);
  // Another worker may have put the same bundle in place first: either is the same code.
  await rename(staging, out).catch(() => rm(staging, { force: true }));
  return bundle;
}

/** Bundles of earlier sources are removed once a day old (a younger one may be another run's). */
async function pruneOlderBundles(): Promise<void> {
  const dayAgo = Date.now() - 24 * 3600 * 1000;
  for (const entry of await readdir(CACHE).catch(() => [] as string[])) {
    const file = path.join(CACHE, entry);
    const info = await stat(file).catch(() => undefined);
    if (info !== undefined && info.mtimeMs < dayAgo) await rm(file, { force: true });
  }
}
