import { createPublicClient, createWalletClient, http, type Address, type Hash, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress } from 'viem/accounts';
import { USDT_ABI } from '../../src/adapters/chain/usdt-abi';
import { countTransfersTo } from '../../src/adapters/chain/usdt-reads';
import { ensureLocalContracts } from '../../dev/local/local-contracts';
import { startAnvil } from '../../dev/local/infra/anvil';
import { freePort } from '../../dev/local/infra/ports';

/** One JSON-RPC call to a test chain (anvil): its result, or an Error naming the method. */
export async function rpc<T = unknown>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

export interface Wallet {
  address: Address;
  privateKey: Hex;
}

/** A wallet to fund when the chain starts: ETH for gas always, USDT if `usdtUnits` is set. */
export interface Funding {
  wallet: Address;
  usdtUnits?: bigint;
}

/** Enough ETH for any test's gas (100 ETH, in wei). */
const GAS_MONEY = '0x56BC75E2D63100000';

/**
 * anvil with the USDT test token (contracts/TestUSDT.sol, 6 decimals) and the wallets a test funds,
 * and what tests do with it: raw JSON-RPC, mining by hand, USDT transfers and what a wallet received.
 */
export interface TestChain {
  rpcUrl: string;
  usdtAddress: Address;
  /** The test sanctions oracle (isSanctioned), owned by the anvil deployer. */
  sanctionsOracleAddress: Address;
  /** The test price feeds (contracts/TestPriceFeed.sol, owner: the anvil deployer; test/support/price-feeds.ts). */
  brlUsdFeedAddress: Address;
  usdtUsdFeedAddress: Address;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** Mines `blocks` blocks at once. */
  mine(blocks?: number): Promise<void>;
  /** Off: transactions wait in the pool until `mine()`, as a slow chain keeps them. */
  setAutomine(on: boolean): Promise<void>;
  /** A wallet of its own, with ETH for gas and `usdtUnits` sent from the chain's reserve. */
  newWallet(usdtUnits?: bigint): Promise<Wallet>;
  /**
   * A USDT transfer signed by `from`, sent the ordinary way; resolves with its hash once mined.
   * `gas` set skips estimation, so a transfer that reverts is still mined.
   */
  transfer(from: Hex, to: Address, units: bigint, opts?: { gas?: bigint }): Promise<Hash>;
  /** The USDT transfers `wallet` received: how many, their total and their hashes. */
  transfersTo(wallet: Address): ReturnType<typeof countTransfersTo>;
  /** A transaction `wallet` sent that waits in the pool (automine off), if there is one. */
  pendingFrom(wallet: Address): Promise<Hash | undefined>;
  stop(): Promise<void>;
}

export async function startTestChain(
  opts: { chainId?: number; funded?: Funding[] } = {},
): Promise<TestChain> {
  const anvil = await startAnvil({ port: await freePort(), chainId: opts.chainId ?? 42161 });
  try {
    const { rpcUrl } = anvil;
    // Transfers for newWallet() come from a reserve the token mints at deployment, not from mint
    // calls later: tests then move USDT only the way the service and the provider do.
    const reserveKey = generatePrivateKey();
    const reserve = { address: privateKeyToAddress(reserveKey), privateKey: reserveKey };
    const funded = [...(opts.funded ?? []), { wallet: reserve.address, usdtUnits: 1_000_000_000_000n }];
    for (const { wallet } of funded) await rpc(rpcUrl, 'anvil_setBalance', [wallet, GAS_MONEY]);
    // The token and the test sanctions oracle, both owned by the anvil deployer (test/support/screening.ts).
    const { usdtAddress, sanctionsOracleAddress, brlUsdFeedAddress, usdtUsdFeedAddress } =
      await ensureLocalContracts(rpcUrl, {
        mints: funded.flatMap(({ wallet, usdtUnits }) =>
          usdtUnits ? [{ to: wallet, units: usdtUnits }] : [],
        ),
      });
    const client = createPublicClient({ transport: http(rpcUrl) });
    const transfer: TestChain['transfer'] = async (from, to, units, { gas } = {}) => {
      const wallet = createWalletClient({ account: privateKeyToAccount(from), transport: http(rpcUrl) });
      const hash = await wallet.writeContract({
        address: usdtAddress,
        abi: USDT_ABI,
        functionName: 'transfer',
        args: [to, units],
        gas,
        chain: null,
      });
      await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
      return hash;
    };
    return {
      rpcUrl,
      usdtAddress,
      sanctionsOracleAddress,
      brlUsdFeedAddress,
      usdtUsdFeedAddress,
      rpc: (method, params) => rpc(rpcUrl, method, params),
      mine: async (blocks = 1) => {
        await rpc(rpcUrl, 'anvil_mine', [`0x${blocks.toString(16)}`]);
      },
      setAutomine: async (on) => {
        await rpc(rpcUrl, 'evm_setAutomine', [on]);
      },
      async newWallet(usdtUnits = 0n) {
        const privateKey = generatePrivateKey();
        const address = privateKeyToAddress(privateKey);
        await rpc(rpcUrl, 'anvil_setBalance', [address, GAS_MONEY]);
        if (usdtUnits > 0n) await transfer(reserve.privateKey, address, usdtUnits);
        return { address, privateKey };
      },
      transfer,
      transfersTo: (wallet) => countTransfersTo({ rpcUrl, usdtAddress, to: wallet }),
      async pendingFrom(wallet) {
        type Pool = { pending: Record<string, Record<string, { hash: Hash }>> };
        const pool = await rpc<Pool>(rpcUrl, 'txpool_content');
        const sent = Object.entries(pool.pending).find(
          ([from]) => from.toLowerCase() === wallet.toLowerCase(),
        );
        return sent ? Object.values(sent[1])[0]?.hash : undefined;
      },
      stop: () => anvil.stop(),
    };
  } catch (err) {
    await anvil.stop();
    throw err;
  }
}

/**
 * The hash a treasury send answered; fails the test when it answered that screening flagged the
 * receiver instead (a test of the treasury, not of screening).
 */
export function sentHash(
  sent:
    | { txHash: `0x${string}` }
    | { flagged: { source: string; detail: string } }
    | { notSigned: 'receiver_flagged' },
): `0x${string}` {
  if ('flagged' in sent)
    throw new Error(`receiver flagged by ${sent.flagged.source}: ${sent.flagged.detail}`);
  if ('notSigned' in sent) throw new Error('nothing signed: the receiver was flagged and not released');
  return sent.txHash;
}
