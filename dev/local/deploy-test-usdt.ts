import {
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  type Address,
  type Hash,
  type Hex,
  type PublicClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { compileTestUsdt } from './compile-test-usdt';

export interface DeployTestUsdtOptions {
  rpcUrl: string;
  deployerKey: Hex;
  mints: { to: Address; units: bigint }[];
}

/** Deploys contracts/TestUSDT.sol to a local node and mints the given balances; resolves once all are mined. */
export async function deployTestUsdt(opts: DeployTestUsdtOptions): Promise<Address> {
  const { abi, bytecode } = compileTestUsdt();
  const transport = http(opts.rpcUrl);
  const publicClient = createPublicClient({ transport });
  // The wallet signs for whatever chain the node serves (42161 locally); no fixed viem chain object applies.
  const chainId = await publicClient.getChainId();
  const chain = defineChain({
    id: chainId,
    name: `local ${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [opts.rpcUrl] } },
  });
  const wallet = createWalletClient({ account: privateKeyToAccount(opts.deployerKey), chain, transport });

  const deployHash = await wallet.deployContract({ abi, bytecode });
  const deployReceipt = await waitForSuccess(publicClient, deployHash, 'TestUSDT deployment');
  if (!deployReceipt.contractAddress)
    throw new Error(`TestUSDT deployment ${deployHash} created no contract`);
  // Receipts carry lower-case addresses; hand out the checksummed form config and logs expect.
  const address = getAddress(deployReceipt.contractAddress);

  // Explicit nonces let all mints go out at once, so interval mining (--block-time) costs one block, not N.
  let nonce = await publicClient.getTransactionCount({
    address: wallet.account.address,
    blockTag: 'pending',
  });
  const mintHashes: Hash[] = [];
  for (const { to, units } of opts.mints) {
    mintHashes.push(
      await wallet.writeContract({ address, abi, functionName: 'mint', args: [to, units], nonce: nonce++ }),
    );
  }
  await Promise.all(mintHashes.map((hash) => waitForSuccess(publicClient, hash, 'TestUSDT mint')));
  return address;
}

async function waitForSuccess(client: PublicClient, hash: Hash, what: string) {
  const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 100 });
  if (receipt.status !== 'success') throw new Error(`${what} reverted (tx ${hash})`);
  return receipt;
}
