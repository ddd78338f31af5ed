import { connectLedgerNode, type UsdtLedgerOptions } from './ledger-node';
import type { UsdtLedger } from './ledger-types';
import { createLedgerReads } from './usdt-reads';
import { createLedgerSends } from './treasury-signing';

/**
 * The USDT ledger on the settlement chain: its reads (usdt-reads.ts) and the treasury's sends
 * (treasury-signing.ts) over one node connection, checked once on first use (ledger-node.ts).
 */
export function createUsdtLedger(opts: UsdtLedgerOptions): UsdtLedger {
  const node = connectLedgerNode(opts);
  const reads = createLedgerReads(node);
  return {
    chainId: opts.chainId,
    treasuryAddress: () => node.treasury?.address,
    ...reads,
    ...createLedgerSends(node, reads.balanceOf),
  };
}
