import { z } from 'zod';
import { SCREENING_SOURCES, type ScreeningSource } from '../domain/screening';
import { hex, int, optional, type ConfigIssue, type ConfigRule } from './values';

/** The settlement chain: how a payout settles, the token, the treasury, and the receiver's screening. */

export const CHAIN_VARIABLES = {
  SETTLEMENT_MODE: z.enum(['provider', 'treasury']).default('provider'),
  SETTLEMENT_CONFIRMATIONS: int(1, 1),
  EVM_RPC_URL: z.url().default('http://127.0.0.1:8545'),
  EVM_CHAIN_ID: int(42161, 1),
  // How a COMPLETED payout names its chain to partners (docs/api.md "The Payout object").
  SETTLEMENT_NETWORK_NAME: z.string().min(1).default('Arbitrum One'),
  // The block explorer of EVM_CHAIN_ID: a transfer's link is <url>/tx/<hash>.
  BLOCK_EXPLORER_URL: z.url().default('https://arbiscan.io'),
  // Tether's USDT on Arbitrum One; the local launcher overrides it with its test token.
  USDT_CONTRACT_ADDRESS: hex.default('0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9'),
  TREASURY_PRIVATE_KEY: optional(hex),
  // The treasury's address, for the api (which never holds the key): in treasury mode POST answers
  // 503 while the treasury cannot send (docs/decisions.md D25).
  TREASURY_ADDRESS: optional(
    z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address'),
  ),
  // Treasury mode: how long a signed transfer may wait unmined before it is signed again at the same
  // nonce with higher fees (only when the network now asks more than it offers).
  TREASURY_REPRICE_AFTER_SECONDS: int(120, 10),
  // Receiver screening (docs/screening.md): the sources checked at POST and right before the USDT
  // moves, comma-separated, any of token_blocklist, sanctions_oracle, denylist; "none" turns it off.
  SCREENING_SOURCES: z.preprocess(
    // Empty or blank is unset: the default. Only the exact word "none" turns screening off.
    (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
    z
      .string()
      .default('token_blocklist,sanctions_oracle,denylist')
      .transform((v, ctx) => {
        const list = v.split(',').map((s) => s.trim());
        if (list.length === 1 && list[0] === 'none') return [] as ScreeningSource[];
        const unknown = list.filter((s) => !(SCREENING_SOURCES as readonly string[]).includes(s));
        if (unknown.length > 0) {
          ctx.addIssue({
            code: 'custom',
            message: `unknown source(s) "${unknown.join('", "')}": list ${SCREENING_SOURCES.join(', ')}, or none alone`,
          });
          return z.NEVER;
        }
        return [...new Set(list)] as ScreeningSource[];
      }),
  ),
  // Chainalysis' sanctions oracle, at this address on Arbitrum One (docs/screening.md); the local
  // launcher overrides it with its test oracle.
  SANCTIONS_ORACLE_ADDRESS: hex.default('0x40C57923924B5c5c5455c48D93317139ADDaC8fb'),
  // How long a wallet's screening verdict is reused (POST and the step before sending).
  SCREENING_CACHE_SECONDS: int(5, 0).refine((v) => v <= 300, 'must be at most 300'),
};

// What a COMPLETED payout shows of its chain, wherever a payout is answered.
export const SETTLEMENT_NETWORK = ['EVM_CHAIN_ID', 'SETTLEMENT_NETWORK_NAME', 'BLOCK_EXPLORER_URL'] as const;

/** Treasury mode cannot run without the treasury: the worker's key, the api's address. */
export const treasuryRules: ConfigRule = (env, reads) => {
  const issues: ConfigIssue[] = [];
  if (reads.has('TREASURY_PRIVATE_KEY') && env.SETTLEMENT_MODE === 'treasury' && !env.TREASURY_PRIVATE_KEY) {
    issues.push({
      code: 'custom',
      path: ['TREASURY_PRIVATE_KEY'],
      message: 'is required when SETTLEMENT_MODE=treasury',
    });
  }
  if (reads.has('TREASURY_ADDRESS') && env.SETTLEMENT_MODE === 'treasury' && !env.TREASURY_ADDRESS) {
    issues.push({
      code: 'custom',
      path: ['TREASURY_ADDRESS'],
      message: 'is required when SETTLEMENT_MODE=treasury (the api refuses new payouts while it cannot send)',
    });
  }
  return issues;
};
