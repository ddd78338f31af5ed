import { createPublicClient, http, type Address } from 'viem';
import { deployTestUsdt } from './deploy-test-usdt';
import { anvilAccount } from './infra/anvil';

const MINT_UNITS = 10_000_000n * 1_000_000n; // 10 million USDT each to the sandbox and the treasury

/**
 * The local USDT test token at `knownAddress` when the chain still has it (anvil state kept across
 * restarts), else a fresh deployment funded for the sandbox and the treasury.
 */
export async function ensureTestUsdt(rpcUrl: string, knownAddress?: Address): Promise<Address> {
  if (knownAddress) {
    const code = await createPublicClient({ transport: http(rpcUrl) }).getCode({ address: knownAddress });
    if (code && code !== '0x') return knownAddress;
  }
  return deployTestUsdt({
    rpcUrl,
    deployerKey: anvilAccount('deployer').privateKey,
    mints: [
      { to: anvilAccount('provider-sandbox').address, units: MINT_UNITS },
      { to: anvilAccount('treasury').address, units: MINT_UNITS },
    ],
  });
}
