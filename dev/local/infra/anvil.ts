import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Address, Hex } from 'viem';
import { isListening } from './ports';
import type { ExitStatus } from './processes';

// Local EVM node for tests, demos and the launcher. Production points EVM_RPC_URL at a real RPC instead.

export interface AnvilHandle {
  rpcUrl: string;
  pid: number | undefined;
  /** Settles when the node is gone, however it went. */
  exited: Promise<ExitStatus>;
  stop(): Promise<void>;
}

export interface StartAnvilOptions {
  port: number;
  /** Defaults to 42161 so signatures and chain-id checks behave as on Arbitrum One. */
  chainId?: number;
  /** Seconds between blocks; omitted = mine each transaction at once (fastest for tests). */
  blockTime?: number;
  /** Load the chain from this file if present and save it back, so `npm start` keeps balances across runs. */
  stateFile?: string;
  log?: (line: string) => void;
  /** A process group of its own, so only the caller gets the terminal's signals (see processes.ts). */
  ownProcessGroup?: boolean;
}

/**
 * The default anvil/hardhat mnemonic ("test test ... junk") accounts #0..#3. These keys are PUBLIC and known
 * to everyone: use them only on the local chain, never on a real network.
 */
export const ANVIL_DEV_ACCOUNTS = [
  {
    role: 'deployer',
    address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
    privateKey: '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  },
  {
    role: 'provider-sandbox',
    address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    privateKey: '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  },
  {
    role: 'treasury',
    address: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
    privateKey: '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  },
  {
    role: 'spare',
    address: '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
    privateKey: '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  },
] as const satisfies readonly { role: string; address: Address; privateKey: Hex }[];

export type AnvilRole = (typeof ANVIL_DEV_ACCOUNTS)[number]['role'];

export function anvilAccount(role: AnvilRole): { address: Address; privateKey: Hex } {
  const account = ANVIL_DEV_ACCOUNTS.find((a) => a.role === role);
  if (!account) throw new Error(`no anvil account with role ${role}`);
  return account;
}

const READY_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 5_000;
// With --state, anvil otherwise saves only on a clean exit; periodic dumps survive a killed launcher.
const STATE_DUMP_INTERVAL_S = 5;

/** The anvil binary: the platform package's bin, else whatever npm linked into node_modules/.bin. */
export function anvilBinary(): string {
  try {
    // The platform package is ESM with no "exports" map, so resolving its package.json works from CommonJS.
    const pkg = require.resolve('@foundry-rs/anvil-linux-amd64/package.json');
    const bin = path.join(path.dirname(pkg), 'bin', 'anvil');
    if (existsSync(bin)) return bin;
  } catch {
    // Not installed for this platform: fall through.
  }
  for (let dir = __dirname; path.dirname(dir) !== dir; dir = path.dirname(dir)) {
    const bin = path.join(dir, 'node_modules', '.bin', 'anvil');
    if (existsSync(bin)) return bin;
  }
  throw new Error('anvil binary not found: run npm install (package @foundry-rs/anvil)');
}

export async function startAnvil(opts: StartAnvilOptions): Promise<AnvilHandle> {
  const host = '127.0.0.1';
  const rpcUrl = `http://${host}:${opts.port}`;
  const log = opts.log ?? (() => {});

  // Anvil reports a busy port only on stderr, and our readiness probe would happily talk to whatever
  // already listens there; refuse up front instead of silently sharing someone else's chain.
  if (await isListening(host, opts.port)) throw new Error(`anvil: port ${opts.port} is already in use`);

  const args = [
    '--host',
    host,
    '--port',
    String(opts.port),
    '--chain-id',
    String(opts.chainId ?? 42161),
    '--silent',
  ];
  if (opts.blockTime !== undefined) args.push('--block-time', String(opts.blockTime));
  if (opts.stateFile) args.push('--state', opts.stateFile, '--state-interval', String(STATE_DUMP_INTERVAL_S));

  const child = spawn(anvilBinary(), args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: opts.ownProcessGroup ?? false,
  });
  const output: string[] = [];
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) {
      if (!line.trim()) continue;
      output.push(line);
      log(line);
    }
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);

  const exited = new Promise<ExitStatus>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  // A crashed test or launcher must not leave a node holding the port.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const stop = async () => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode !== null || child.signalCode !== null) return;
    // SIGTERM lets anvil write --state before leaving; SIGKILL only if it hangs.
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };

  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(`anvil exited before it was ready: ${output.join('\n') || `code ${child.exitCode}`}`);
    }
    if (await answersChainId(rpcUrl)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`anvil did not answer on ${rpcUrl} within ${READY_TIMEOUT_MS} ms`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  log(`anvil ready on ${rpcUrl} (chain id ${opts.chainId ?? 42161})`);
  return { rpcUrl, pid: child.pid, exited, stop };
}

async function answersChainId(rpcUrl: string): Promise<boolean> {
  try {
    const res = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(1_000),
    });
    const body = (await res.json()) as { result?: unknown };
    return typeof body.result === 'string';
  } catch {
    return false;
  }
}
