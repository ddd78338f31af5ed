import {
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  type Address,
  type Chain,
  type Hash,
  type Hex,
  type HttpTransport,
  type PrivateKeyAccount,
  type PublicClient,
  type WalletClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { compileContract, type LocalContractName } from './compile-contracts';

/** A dev account signing on a local node: what deploys the local contracts and acts as their owner. */
export interface LocalSigner {
  publicClient: PublicClient;
  wallet: WalletClient<HttpTransport, Chain, PrivateKeyAccount>;
}

export async function localSigner(rpcUrl: string, privateKey: Hex): Promise<LocalSigner> {
  const transport = http(rpcUrl);
  const publicClient = createPublicClient({ transport });
  // The wallet signs for whatever chain the node serves (42161 locally); no fixed viem chain object applies.
  const chainId = await publicClient.getChainId();
  const chain = defineChain({
    id: chainId,
    name: `local ${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const wallet = createWalletClient({ account: privateKeyToAccount(privateKey), chain, transport });
  return { publicClient, wallet };
}

/**
 * Deploys contracts/<name>.sol from the signer, with its constructor's `args` if it takes any;
 * resolves with its checksummed address once mined.
 */
export async function deployCompiled(
  signer: LocalSigner,
  name: LocalContractName,
  args: readonly unknown[] = [],
): Promise<Address> {
  const { abi, bytecode } = compileContract(name);
  const hash = await signer.wallet.deployContract({ abi, bytecode, args });
  const receipt = await waitForSuccess(signer.publicClient, hash, `${name} deployment`);
  if (!receipt.contractAddress) throw new Error(`${name} deployment ${hash} created no contract`);
  // Receipts carry lower-case addresses; hand out the checksummed form config and logs expect.
  return getAddress(receipt.contractAddress);
}

export async function waitForSuccess(client: PublicClient, hash: Hash, what: string) {
  const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 100 });
  if (receipt.status !== 'success') throw new Error(`${what} reverted (tx ${hash})`);
  return receipt;
}
