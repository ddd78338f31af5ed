import type { Address } from 'viem';
import type { SenderHealth, UsdtLedger } from './ledger-types';
import { createUsdtLedger } from './usdt-ledger';

/** Whether the treasury can send USDT now, and if not, why (see SenderHealth). */
export type TreasuryHealth = SenderHealth;

export interface TreasuryHealthProbe {
  /**
   * The treasury's health, read from the chain at most once per cache period (concurrent callers
   * share one read). Throws a ChainError when the chain cannot tell: that is no verdict either way.
   */
  treasuryCanSend(): Promise<TreasuryHealth>;
}

export interface TreasuryHealthOptions {
  rpcUrl: string;
  chainId: number;
  usdtAddress: Address;
  /** The treasury's address: the probe reads, it never needs the treasury's key. */
  treasuryAddress: Address;
  /** How long an answer is reused. Default 5 s. */
  cacheMs?: number;
  now?: () => number;
}

/**
 * The treasury's ability to send, for whoever must not start what it cannot finish: in treasury
 * mode the api refuses new payouts while it is false (no payer pays into a payout that cannot
 * settle), and /readyz can show why. The worker's own checks, and its gauge treasury_can_send, read
 * the same answer through its ledger.
 */
export function createTreasuryHealthProbe(
  opts: TreasuryHealthOptions,
  ledger: Pick<UsdtLedger, 'senderHealth'> = createUsdtLedger({
    rpcUrl: opts.rpcUrl,
    chainId: opts.chainId,
    usdtAddress: opts.usdtAddress,
  }),
): TreasuryHealthProbe {
  const cacheMs = opts.cacheMs ?? 5_000;
  const now = opts.now ?? Date.now;
  let cached: { answer: Promise<TreasuryHealth>; at: number } | undefined;
  return {
    treasuryCanSend() {
      if (cached && now() - cached.at < cacheMs) return cached.answer;
      const answer = ledger.senderHealth(opts.treasuryAddress);
      const entry = { answer, at: now() };
      cached = entry;
      // A failed read is not kept: the next caller asks the chain again.
      answer.catch(() => {
        if (cached === entry) cached = undefined;
      });
      return answer;
    },
  };
}
