import type { Address, Hash, Hex } from 'viem';
import { compileContract } from './compile-contracts';
import { deployCompiled, localSigner, waitForSuccess } from './local-signer';

export interface DeployTestUsdtOptions {
  rpcUrl: string;
  deployerKey: Hex;
  mints: { to: Address; units: bigint }[];
}

/** Deploys contracts/TestUSDT.sol to a local node and mints the given balances; resolves once all are mined. */
export async function deployTestUsdt(opts: DeployTestUsdtOptions): Promise<Address> {
  const signer = await localSigner(opts.rpcUrl, opts.deployerKey);
  const address = await deployCompiled(signer, 'TestUSDT');
  const { abi } = compileContract('TestUSDT');

  // Explicit nonces let all mints go out at once, so interval mining (--block-time) costs one block, not N.
  let nonce = await signer.publicClient.getTransactionCount({
    address: signer.wallet.account.address,
    blockTag: 'pending',
  });
  const mintHashes: Hash[] = [];
  for (const { to, units } of opts.mints) {
    mintHashes.push(
      await signer.wallet.writeContract({
        address,
        abi,
        functionName: 'mint',
        args: [to, units],
        nonce: nonce++,
      }),
    );
  }
  await Promise.all(mintHashes.map((hash) => waitForSuccess(signer.publicClient, hash, 'TestUSDT mint')));
  return address;
}
