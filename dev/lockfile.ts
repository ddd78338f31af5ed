import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Keeps package-lock.json complete for every platform, so `npm ci` accepts it anywhere.
 *
 * Why this exists: packages with native binaries (anvil, swc, the resolver jest uses) list one
 * optional dependency per platform. npm records each of them in the lockfile, with its `os`, `cpu`
 * and `libc`, so a lockfile written on Linux also installs on macOS. When the registry answers 404
 * for some of them (a mirror that serves only the platforms its users run), `npm install` drops
 * those entries from the lockfile without a word, and `npm ci` then refuses the lockfile ("Missing:
 * @swc/core-darwin-arm64@ from lock file"): it rebuilds the tree from package.json, sees the
 * dependency edge with no entry, and calls the lockfile out of sync.
 *
 * The fix is what npm writes when the registry serves everything: an entry per platform package,
 * with the version the parent pins and its platform fields. npm never fetches an optional package
 * whose `os`/`cpu`/`libc` do not match the machine, so these entries cost nothing where they do
 * not apply, and on the platform they name npm fetches them from the registry as usual.
 *
 * `npm run lockfile` after any dependency change; test/build/lockfile.test.ts fails until it ran.
 */

interface LockEntry {
  version?: string;
  optional?: boolean;
  dev?: boolean;
  os?: string[];
  cpu?: string[];
  libc?: string[];
  optionalDependencies?: Record<string, string>;
  [key: string]: unknown;
}
export interface Lockfile {
  lockfileVersion: number;
  packages: Record<string, LockEntry>;
  [key: string]: unknown;
}

const OS = [
  'darwin',
  'linux',
  'win32',
  'freebsd',
  'openbsd',
  'netbsd',
  'android',
  'openharmony',
  'sunos',
  'aix',
];
const CPU: Record<string, string> = {
  x64: 'x64',
  amd64: 'x64',
  arm64: 'arm64',
  arm: 'arm',
  ia32: 'ia32',
  ppc64: 'ppc64',
  s390x: 's390x',
  riscv64: 'riscv64',
  loong64: 'loong64',
  mips64el: 'mips64el',
  wasm32: 'wasm32',
};

/** `os`/`cpu`/`libc` from a platform package's name (`@swc/core-linux-arm-gnueabihf`, `...-win32-amd64`). */
export function platformOf(name: string): Pick<LockEntry, 'os' | 'cpu' | 'libc'> {
  const parts = name.split('/').pop()!.split('-');
  const os = parts.find((p) => OS.includes(p));
  const cpuPart = parts.find((p) => p in CPU);
  if (!os || !cpuPart) throw new Error(`cannot tell the platform of ${name}: add its os/cpu by hand`);
  const libc = parts.some((p) => p.startsWith('musl'))
    ? ['musl']
    : parts.some((p) => p.startsWith('gnu'))
      ? ['glibc']
      : undefined;
  return { os: [os], cpu: [CPU[cpuPart]!], ...(libc ? { libc } : {}) };
}

/** Where npm would place `name` for the package at `parentKey` (hoisted unless nested already). */
function installKey(lock: Lockfile, parentKey: string, name: string): string | undefined {
  for (let dir = parentKey; ;) {
    const key = `${dir ? `${dir}/` : ''}node_modules/${name}`;
    if (lock.packages[key]) return key;
    const i = dir.lastIndexOf('/node_modules/');
    if (dir === '') return undefined;
    dir = i === -1 ? '' : dir.slice(0, i);
  }
}

/** Optional platform dependencies of locked packages that have no entry of their own. */
export function missingPlatformEntries(
  lock: Lockfile,
): { key: string; name: string; version: string; parent: string }[] {
  const missing = new Map<string, { key: string; name: string; version: string; parent: string }>();
  for (const [parent, entry] of Object.entries(lock.packages)) {
    for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
      if (installKey(lock, parent, name)) continue;
      const key = `node_modules/${name}`;
      if (!/^\d+\.\d+\.\d+(?:-[\w.]+)?$/.test(version)) {
        throw new Error(`${parent} wants ${name}@${version}, not an exact version: resolve it by hand`);
      }
      missing.set(key, { key, name, version, parent });
    }
  }
  return [...missing.values()];
}

/** The lockfile with an entry for every missing platform package (sorted as npm sorts them). */
export function completeLockfile(lock: Lockfile): Lockfile {
  const packages = { ...lock.packages };
  for (const { key, name, version, parent } of missingPlatformEntries(lock)) {
    // Field for field what npm itself writes (keys in its order), so `npm install` leaves it as is.
    const fields: LockEntry = {
      ...platformOf(name),
      ...(lock.packages[parent]?.dev ? { dev: true } : {}),
      optional: true,
    };
    packages[key] = {
      version,
      ...Object.fromEntries(Object.entries(fields).sort(([a], [b]) => a.localeCompare(b))),
    };
  }
  const [root, ...rest] = Object.keys(packages);
  const sorted = [root!, ...rest.sort((a, b) => a.localeCompare(b, 'en'))];
  return { ...lock, packages: Object.fromEntries(sorted.map((k) => [k, packages[k]!])) };
}

if (require.main === module) {
  const file = path.resolve(__dirname, '..', 'package-lock.json');
  const lock = JSON.parse(readFileSync(file, 'utf8')) as Lockfile;
  const added = missingPlatformEntries(lock);
  writeFileSync(file, `${JSON.stringify(completeLockfile(lock), null, 2)}\n`);
  process.stdout.write(
    added.length
      ? `package-lock.json: added ${added.length} platform entries (${added.map((a) => a.name).join(', ')})\n`
      : 'package-lock.json: complete\n',
  );
}
