import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Abi, Hex } from 'viem';

// Compiles the local chain's contracts (contracts/<Name>.sol) with solc-js (bundled compiler: no
// download, works offline). Used only when building the local chain (launcher, tests, compose's
// chain setup), never on a request path. Each compiled ABI + bytecode is committed as
// contracts/<Name>.json (run this file to refresh them all), so an image without solc (a
// devDependency) can still deploy them.

export interface CompiledContract {
  abi: Abi;
  bytecode: Hex;
}

/** Every contract of the local chain: the stand-ins for USDT, the sanctions oracle and a Chainlink price feed. */
export const LOCAL_CONTRACT_NAMES = ['TestUSDT', 'TestSanctionsOracle', 'TestPriceFeed'] as const;
export type LocalContractName = (typeof LOCAL_CONTRACT_NAMES)[number];

const sourceName = (name: LocalContractName) => `${name}.sol`;

// Part of the cache key: changing any setting must invalidate the cached artifact.
// evmVersion is pinned (not left to the compiler default) so the bytecode runs on any current node.
function settings(name: LocalContractName) {
  return {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: 'cancun',
    outputSelection: { [sourceName(name)]: { [name]: ['abi', 'evm.bytecode.object'] } },
  } as const;
}

interface CacheFile {
  key: string;
  abi: Abi;
  bytecode: Hex;
}

/** The repository root: the nearest ancestor holding contracts/TestUSDT.sol (works from src/ and dist/). */
function findRepoRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'contracts', sourceName('TestUSDT')))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`contracts/TestUSDT.sol not found above ${__dirname}`);
  }
}

/** The committed artefact, e.g. `contracts/TestUSDT.json`, checked against the source by its key. */
export const artifactFile = (name: LocalContractName) => path.join('contracts', `${name}.json`);

/** sha256 of the source and the compiler settings (the solc version is fixed by package-lock). */
export function sourceKey(name: LocalContractName, root = findRepoRoot()): string {
  const source = readFileSync(path.join(root, 'contracts', sourceName(name)), 'utf8');
  return createHash('sha256')
    .update(source)
    .update(JSON.stringify(settings(name)))
    .digest('hex');
}

/**
 * The committed artefact when it was made from the current source, else a fresh compile (kept in
 * `cacheDir`): an edited contract is never deployed from a stale artefact.
 */
export function compileContract(name: LocalContractName, opts: { cacheDir?: string } = {}): CompiledContract {
  const root = findRepoRoot();
  const key = sourceKey(name, root);
  const committed = readCache(path.join(root, artifactFile(name)), key);
  if (committed) return committed;
  return compileFresh(name, {
    root,
    key,
    cacheFile: path.join(opts.cacheDir ?? path.join(root, '.data', 'build'), `${name}.json`),
  });
}

/** Always solc (cache aside from `cacheFile`, if given and current). */
export function compileFresh(
  name: LocalContractName,
  opts: { root?: string; key?: string; cacheFile?: string } = {},
): CompiledContract {
  const root = opts.root ?? findRepoRoot();
  const key = opts.key ?? sourceKey(name, root);
  const source = readFileSync(path.join(root, 'contracts', sourceName(name)), 'utf8');
  const cacheFile = opts.cacheFile;
  const cached = cacheFile ? readCache(cacheFile, key) : undefined;
  if (cached) return cached;

  const compiled = runSolc(name, source);
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

function runSolc(name: LocalContractName, source: string): CompiledContract {
  // Loaded lazily: requiring solc-js costs about a second, which a cache hit should not pay.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const solc = require('solc') as { compile(input: string): string };
  const input = {
    language: 'Solidity',
    sources: { [sourceName(name)]: { content: source } },
    settings: settings(name),
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;

  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) {
    throw new Error(
      `solc failed to compile ${sourceName(name)}:\n${errors.map((e) => e.formattedMessage).join('\n')}`,
    );
  }
  const contract = output.contracts?.[sourceName(name)]?.[name];
  if (!contract?.evm.bytecode.object) throw new Error(`solc produced no bytecode for ${name}`);
  return { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` };
}

if (require.main === module) {
  const root = findRepoRoot();
  for (const name of LOCAL_CONTRACT_NAMES) {
    const key = sourceKey(name, root);
    writeArtifact(path.join(root, artifactFile(name)), key, compileFresh(name, { root, key }));
    process.stdout.write(`${artifactFile(name)} written (key ${key.slice(0, 12)})\n`);
  }
}
