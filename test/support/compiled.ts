import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { transformFile } from '@swc/core';

const ROOT = path.resolve(__dirname, '../..');

let compiled: Promise<string> | undefined;

/**
 * The service's sources (src/) compiled to CommonJS with the swc settings jest's own transform uses
 * (jest.config.js): for a command a test runs many times as a process of its own (the admin CLI),
 * node then starts the compiled entry at once instead of compiling every module again through tsx
 * in each process, as the image runs compiled output (`node dist/src/main/admin.js`). The same
 * sources, nothing else: the directory sits under the repository's node_modules/.cache, so packages
 * and the migrations/ directory are found as from src/. It is named by a hash of every source file
 * (path and content), so a changed source is compiled again and unchanged ones are compiled once,
 * whichever test file or jest worker asks first (written aside, then renamed into place).
 */
function compiledRoot(): Promise<string> {
  compiled ??= (async () => {
    const files = (await readdir(path.join(ROOT, 'src'), { recursive: true }))
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
      .map((f) => path.join('src', f))
      .sort();
    const sources = await Promise.all(files.map((f) => readFile(path.join(ROOT, f))));
    const hash = createHash('sha256');
    files.forEach((f, i) => hash.update(`${f}\0${sources[i]!.length}\0`).update(sources[i]!));
    const cache = path.join(ROOT, 'node_modules/.cache/payouts-test-js');
    const out = path.join(cache, hash.digest('hex').slice(0, 32));
    if (existsSync(out)) return out;
    await pruneOlderCompilations(cache);
    const staging = path.join(cache, `staging-${process.pid}-${randomUUID()}`);
    try {
      await Promise.all(
        files.map(async (file) => {
          const { code } = await transformFile(path.join(ROOT, file), {
            swcrc: false,
            configFile: false,
            sourceMaps: false,
            jsc: { target: 'es2022', parser: { syntax: 'typescript' } },
            module: { type: 'commonjs', ignoreDynamic: true },
          });
          const dest = path.join(staging, file.replace(/\.ts$/, '.js'));
          await mkdir(path.dirname(dest), { recursive: true });
          await writeFile(dest, code);
        }),
      );
      // Another worker may have put the same compilation in place first: then it is used.
      await rename(staging, out).catch((err: NodeJS.ErrnoException) => {
        if (!existsSync(out)) throw err;
      });
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    return out;
  })();
  return compiled;
}

/**
 * Compilations of earlier sources, left by earlier runs, are removed once a day old: a checkout that
 * changes its sources all day keeps a day's worth at most. A younger one may be another run's, still
 * in use.
 */
async function pruneOlderCompilations(cache: string): Promise<void> {
  const entries = await readdir(cache).catch(() => [] as string[]);
  const dayAgo = Date.now() - 24 * 3600 * 1000;
  for (const entry of entries) {
    const dir = path.join(cache, entry);
    const info = await stat(dir).catch(() => undefined);
    if (info !== undefined && info.mtimeMs < dayAgo) await rm(dir, { recursive: true, force: true });
  }
}

/** The compiled JavaScript of a TypeScript entry under src/ (`src/main/admin.ts`), to run with node. */
export async function compiledEntry(entry: string): Promise<string> {
  if (!entry.startsWith('src/') || !entry.endsWith('.ts'))
    throw new Error(`not an entry under src/: ${entry}`);
  const js = path.join(await compiledRoot(), entry.replace(/\.ts$/, '.js'));
  if (!existsSync(js)) throw new Error(`${entry} was not compiled (no ${js})`);
  return js;
}
