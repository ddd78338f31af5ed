import type { Abi, Address, Hex } from 'viem';
import { compileContract, type LocalContractName } from './compile-contracts';
import { anvilAccount } from './infra/anvil';
import { localSigner, waitForSuccess } from './local-signer';
import type { LocalContracts } from './local-contracts';

/** The two contracts screening reads. */
export type ScreeningContracts = Pick<LocalContracts, 'usdtAddress' | 'sanctionsOracleAddress'>;

// The owner's side of the local token's blocklist and of the test sanctions oracle, so a test or a
// developer can put a wallet on either list and take it off again. The owner is the anvil deployer,
// which deployed both (local-contracts.ts); its key is public and local-only.

const OWNER_KEY: Hex = anvilAccount('deployer').privateKey;

/** The token's issuer blocklist: the wallet can still receive but no longer send. */
export const blockOnToken = (rpcUrl: string, token: Address, wallet: Address) =>
  ownerCall(rpcUrl, 'TestUSDT', token, 'addToBlockedList', [wallet]);

export const unblockOnToken = (rpcUrl: string, token: Address, wallet: Address) =>
  ownerCall(rpcUrl, 'TestUSDT', token, 'removeFromBlockedList', [wallet]);

export const sanctionOnOracle = (rpcUrl: string, oracle: Address, wallet: Address) =>
  ownerCall(rpcUrl, 'TestSanctionsOracle', oracle, 'addToSanctionsList', [[wallet]]);

export const unsanctionOnOracle = (rpcUrl: string, oracle: Address, wallet: Address) =>
  ownerCall(rpcUrl, 'TestSanctionsOracle', oracle, 'removeFromSanctionsList', [[wallet]]);

/** What the service's screening would read for `wallet` on these contracts. */
export async function screeningStatus(
  rpcUrl: string,
  contracts: ScreeningContracts,
  wallet: Address,
): Promise<{ blocked: boolean; sanctioned: boolean }> {
  const { publicClient } = await localSigner(rpcUrl, OWNER_KEY);
  const read = (name: LocalContractName, address: Address, functionName: string) =>
    publicClient.readContract({
      address,
      abi: abiOf(name),
      functionName,
      args: [wallet],
    }) as Promise<boolean>;
  const [blocked, sanctioned] = await Promise.all([
    read('TestUSDT', contracts.usdtAddress, 'isBlocked'),
    read('TestSanctionsOracle', contracts.sanctionsOracleAddress, 'isSanctioned'),
  ]);
  return { blocked, sanctioned };
}

const OWNER_CALL_GAS = 1_000_000n;

/** One owner transaction on a local contract; resolves once mined, throws if it reverted. */
export async function ownerCall(
  rpcUrl: string,
  name: LocalContractName,
  address: Address,
  functionName: string,
  args: unknown[],
): Promise<void> {
  const signer = await localSigner(rpcUrl, OWNER_KEY);
  // A fixed, ample limit rather than an estimate: a feed's updateAnswer costs less when the block it is
  // estimated in has the timestamp it stores already than in the next block, where it ran out of gas.
  const hash = await signer.wallet.writeContract({
    address,
    abi: abiOf(name),
    functionName,
    args,
    gas: OWNER_CALL_GAS,
  });
  await waitForSuccess(signer.publicClient, hash, `${name}.${functionName}`);
}

const abiOf = (name: LocalContractName): Abi => compileContract(name).abi;
