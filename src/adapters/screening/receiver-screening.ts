import { createPublicClient, http, type Address, type PublicClient } from 'viem';
import { isMissingFunction, shortError } from '../chain/contract-errors';
import {
  firstFlag,
  ScreeningUnavailableError,
  type ReceiverScreening,
  type ScreeningSource,
  type ScreeningVerdict,
} from '../../domain/screening';
import type { Db } from '../db/pool';
import { findDeniedWallet, type DenylistEntry } from '../db/screening-denylist-repo';

const IS_BLOCKED_ABI = [
  {
    type: 'function',
    name: 'isBlocked',
    stateMutability: 'view',
    inputs: [{ name: 'account', type: 'address' }],
    outputs: [{ name: '', type: 'bool' }],
  },
] as const;

const IS_SANCTIONED_ABI = [
  {
    type: 'function',
    name: 'isSanctioned',
    stateMutability: 'view',
    inputs: [{ name: 'addr', type: 'address' }],
    outputs: [{ name: '', type: 'bool' }],
  },
] as const;

export interface ScreeningSettings {
  /** The sources to check; each can be turned off (SCREENING_SOURCES). */
  sources: readonly ScreeningSource[];
  tokenAddress: Address;
  oracleAddress: Address;
  /** How long a wallet's verdict is reused; 0 reads every source every time. */
  cacheMs: number;
}

export interface ScreeningDeps {
  chain: Pick<PublicClient, 'readContract'>;
  /** The denylist lookup (screening-denylist-repo's findDeniedWallet, bound to a pool). */
  findDenied: (wallet: string) => Promise<DenylistEntry | null>;
  settings: ScreeningSettings;
  now?: () => number;
}

/** Kept small: a POST storm for ever-new wallets must not grow the api's memory. */
const MAX_CACHED_WALLETS = 10_000;

type Flag = Extract<ScreeningVerdict, { kind: 'flagged' }>;

/**
 * Screening through the three sources of docs/decisions.md D45, read together. A flag from any source
 * is the verdict, even when another source could not be read; otherwise an unreadable source makes
 * the whole screening an unknown (ScreeningUnavailableError), never a clear.
 */
export function createReceiverScreening(deps: ScreeningDeps): ReceiverScreening & {
  /** At start: each on-chain source must expose its function (a missing one is not skipped silently). */
  checkSources(): Promise<SourceCheck[]>;
} {
  const { chain, settings } = deps;
  const now = deps.now ?? Date.now;
  const cache = new Map<string, { verdict: ScreeningVerdict; at: number }>();

  const read: Record<ScreeningSource, (wallet: Address) => Promise<Flag | undefined>> = {
    async token_blocklist(wallet) {
      const blocked = await chain.readContract({
        address: settings.tokenAddress,
        abi: IS_BLOCKED_ABI,
        functionName: 'isBlocked',
        args: [wallet],
      });
      if (!blocked) return undefined;
      return {
        kind: 'flagged',
        source: 'token_blocklist',
        detail: `blocked by the token issuer (${settings.tokenAddress})`,
      };
    },
    async sanctions_oracle(wallet) {
      const sanctioned = await chain.readContract({
        address: settings.oracleAddress,
        abi: IS_SANCTIONED_ABI,
        functionName: 'isSanctioned',
        args: [wallet],
      });
      if (!sanctioned) return undefined;
      return {
        kind: 'flagged',
        source: 'sanctions_oracle',
        detail: `listed by the sanctions oracle (${settings.oracleAddress})`,
      };
    },
    async denylist(wallet) {
      const entry = await deps.findDenied(wallet);
      if (!entry) return undefined;
      return {
        kind: 'flagged',
        source: 'denylist',
        detail: `on the operators' denylist since ${entry.addedAt} (${entry.addedBy}: ${entry.reason})`,
      };
    },
  };

  async function screenUncached(wallet: Address): Promise<ScreeningVerdict> {
    const answers = await Promise.allSettled(settings.sources.map((source) => read[source](wallet)));
    const flags: Flag[] = [];
    const unreadable: { source: ScreeningSource; error: string }[] = [];
    answers.forEach((answer, i) => {
      if (answer.status === 'fulfilled') {
        if (answer.value) flags.push(answer.value);
      } else {
        unreadable.push({ source: settings.sources[i]!, error: shortError(answer.reason) });
      }
    });
    const flag = firstFlag(flags);
    if (flag) return flag;
    if (unreadable.length > 0) {
      throw new ScreeningUnavailableError(
        unreadable.map((u) => u.source),
        `screening source(s) unreadable: ${unreadable.map((u) => `${u.source} (${u.error})`).join('; ')}`,
      );
    }
    return { kind: 'clear' };
  }

  return {
    async screen(wallet) {
      const key = wallet.toLowerCase();
      const cached = cache.get(key);
      if (cached && now() - cached.at < settings.cacheMs) return cached.verdict;
      const verdict = await screenUncached(key as Address);
      if (settings.cacheMs > 0) {
        cache.delete(key);
        cache.set(key, { verdict, at: now() });
        // Map keeps insertion order: the first key is the oldest.
        if (cache.size > MAX_CACHED_WALLETS) cache.delete(cache.keys().next().value!);
      }
      return verdict;
    },
    async checkSources() {
      const probe = '0x0000000000000000000000000000000000000001' as Address;
      const checks: SourceCheck[] = [];
      for (const source of settings.sources) {
        if (source === 'denylist') continue;
        const address = source === 'token_blocklist' ? settings.tokenAddress : settings.oracleAddress;
        try {
          await read[source](probe);
          checks.push({ source, address, state: 'ok' });
        } catch (err) {
          checks.push({
            source,
            address,
            state: isMissingFunction(err) ? 'missing' : 'unreadable',
            error: shortError(err),
          });
        }
      }
      return checks;
    },
  };
}

export interface SourceCheck {
  source: ScreeningSource;
  address: Address;
  /** ok: answers; missing: no such function at that address (no code, or it reverts); unreadable: no answer. */
  state: 'ok' | 'missing' | 'unreadable';
  error?: string;
}

/** The public client screening reads the chain through (its own: reads only, short timeout). */
export function screeningChainClient(rpcUrl: string): Pick<PublicClient, 'readContract'> {
  return createPublicClient({ transport: http(rpcUrl, { timeout: 10_000, retryCount: 1 }) });
}

/** Screening on a chain and a database, from the settings SCREENING_* and the two contract addresses. */
export function createChainAndDenylistScreening(s: {
  rpcUrl: string;
  db: Db;
  sources: readonly ScreeningSource[];
  tokenAddress: string;
  oracleAddress: string;
  cacheSeconds: number;
}): ReturnType<typeof createReceiverScreening> {
  return createReceiverScreening({
    chain: screeningChainClient(s.rpcUrl),
    findDenied: (wallet) => findDeniedWallet(s.db, wallet),
    settings: {
      sources: s.sources,
      tokenAddress: s.tokenAddress as Address,
      oracleAddress: s.oracleAddress as Address,
      cacheMs: s.cacheSeconds * 1000,
    },
  });
}

const SOURCE_FUNCTION: Record<Exclude<ScreeningSource, 'denylist'>, string> = {
  token_blocklist: 'isBlocked(address) on USDT_CONTRACT_ADDRESS',
  sanctions_oracle: 'isSanctioned(address) on SANCTIONS_ORACLE_ADDRESS',
};

/**
 * At a process's start: a source whose contract lacks its function stops the process with a message
 * naming the setting (a token without a blocklist is reported, not skipped silently); one that cannot
 * be read now is logged, and every screening meanwhile is an unknown (POST answers 503).
 */
export async function reportScreeningSources(
  screening: { checkSources(): Promise<SourceCheck[]> },
  logger: { info(o: object, msg: string): void; warn(o: object, msg: string): void },
): Promise<void> {
  const checks = await screening.checkSources();
  const missing = checks.filter((c) => c.state === 'missing');
  if (missing.length > 0) {
    throw new Error(
      `screening: ${missing
        .map(
          (c) =>
            `${c.address} has no ${SOURCE_FUNCTION[c.source as keyof typeof SOURCE_FUNCTION]} (${c.error})`,
        )
        .join(
          '; ',
        )}: point the setting at a contract that has it, or leave the source out of SCREENING_SOURCES`,
    );
  }
  for (const c of checks) {
    if (c.state === 'unreadable') {
      logger.warn(
        { source: c.source, address: c.address, err: c.error },
        'screening source unreadable at start',
      );
    }
  }
  logger.info({ sources: checks.map((c) => `${c.source}:${c.state}`) }, 'screening sources checked');
}
