import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Abi, Hex } from 'viem';

// Compiles contracts/TestUSDT.sol with solc-js (bundled compiler: no download, works offline).
// Used only when building the local chain (launcher, tests, compose's chain setup), never on a
// request path. The compiled ABI + bytecode is committed as contracts/TestUSDT.json (run this file
// to refresh it), so an image without solc (a devDependency) can still deploy the token.

export interface CompiledContract {
  abi: Abi;
  bytecode: Hex;
}

const SOURCE_NAME = 'TestUSDT.sol';
const CONTRACT_NAME = 'TestUSDT';

// Part of the cache key: changing any setting must invalidate the cached artifact.
// evmVersion is pinned (not left to the compiler default) so the bytecode runs on any current node.
const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'cancun',
  outputSelection: { [SOURCE_NAME]: { [CONTRACT_NAME]: ['abi', 'evm.bytecode.object'] } },
} as const;

interface CacheFile {
  key: string;
  abi: Abi;
  bytecode: Hex;
}

/** The repository root: the nearest ancestor holding contracts/TestUSDT.sol (works from src/ and dist/). */
function findRepoRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'contracts', SOURCE_NAME))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`contracts/${SOURCE_NAME} not found above ${__dirname}`);
  }
}

/** The committed artefact: `contracts/TestUSDT.json`, checked against the source by its key. */
export const ARTIFACT_FILE = path.join('contracts', `${CONTRACT_NAME}.json`);

/** sha256 of the source and the compiler settings (the solc version is fixed by package-lock). */
export function sourceKey(root = findRepoRoot()): string {
  const source = readFileSync(path.join(root, 'contracts', SOURCE_NAME), 'utf8');
  return createHash('sha256').update(source).update(JSON.stringify(SETTINGS)).digest('hex');
}

/**
 * The committed artefact when it was made from the current source, else a fresh compile (kept in
 * `cacheDir`): an edited contract is never deployed from a stale artefact.
 */
export function compileTestUsdt(opts: { cacheDir?: string } = {}): CompiledContract {
  const root = findRepoRoot();
  const key = sourceKey(root);
  const committed = readCache(path.join(root, ARTIFACT_FILE), key);
  if (committed) return committed;
  return compileFresh({
    root,
    key,
    cacheFile: path.join(opts.cacheDir ?? path.join(root, '.data', 'build'), `${CONTRACT_NAME}.json`),
  });
}

/** Always solc (cache aside from `cacheFile`, if given and current). */
export function compileFresh(
  opts: { root?: string; key?: string; cacheFile?: string } = {},
): CompiledContract {
  const root = opts.root ?? findRepoRoot();
  const key = opts.key ?? sourceKey(root);
  const source = readFileSync(path.join(root, 'contracts', SOURCE_NAME), 'utf8');
  const cacheFile = opts.cacheFile;
  const cached = cacheFile ? readCache(cacheFile, key) : undefined;
  if (cached) return cached;

  const compiled = runSolc(source);
  if (cacheFile) writeArtifact(cacheFile, key, compiled);
  return compiled;
}

function writeArtifact(cacheFile: string, key: string, compiled: CompiledContract): void {
  mkdirSync(path.dirname(cacheFile), { recursive: true });
  // Write-then-rename: parallel test workers may compile at once and must never read half a file.
  const tmp = `${cacheFile}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify({ key, ...compiled } satisfies CacheFile, null, 2));
  renameSync(tmp, cacheFile);
}

function readCache(file: string, key: string): CompiledContract | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<CacheFile>;
    if (parsed.key === key && Array.isArray(parsed.abi) && typeof parsed.bytecode === 'string') {
      return { abi: parsed.abi, bytecode: parsed.bytecode };
    }
  } catch {
    // Missing or corrupt cache: recompile.
  }
  return undefined;
}

interface SolcOutput {
  errors?: { severity: 'error' | 'warning' | 'info'; formattedMessage: string }[];
  contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
}

function runSolc(source: string): CompiledContract {
  // Loaded lazily: requiring solc-js costs about a second, which a cache hit should not pay.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const solc = require('solc') as { compile(input: string): string };
  const input = { language: 'Solidity', sources: { [SOURCE_NAME]: { content: source } }, settings: SETTINGS };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;

  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) {
    throw new Error(
      `solc failed to compile ${SOURCE_NAME}:\n${errors.map((e) => e.formattedMessage).join('\n')}`,
    );
  }
  const contract = output.contracts?.[SOURCE_NAME]?.[CONTRACT_NAME];
  if (!contract?.evm.bytecode.object) throw new Error(`solc produced no bytecode for ${CONTRACT_NAME}`);
  return { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` };
}

if (require.main === module) {
  const root = findRepoRoot();
  const key = sourceKey(root);
  writeArtifact(path.join(root, ARTIFACT_FILE), key, compileFresh({ root, key }));
  process.stdout.write(`${ARTIFACT_FILE} written (key ${key.slice(0, 12)})\n`);
}
