import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createPublicClient, encodeDeployData, http, type Address, type Hex, type PublicClient } from 'viem';
import { compileContract, type LocalContractName } from './compile-contracts';
import { deployTestUsdt } from './deploy-test-usdt';
import { anvilAccount } from './infra/anvil';
import { deployCompiled, localSigner } from './local-signer';

/**
 * The local chain's stand-ins for USDT0, the Chainalysis sanctions oracle and the two Chainlink price
 * feeds treasury mode quotes from, all owned by the anvil deployer.
 */
export interface LocalContracts {
  usdtAddress: Address;
  sanctionsOracleAddress: Address;
  brlUsdFeedAddress: Address;
  usdtUsdFeedAddress: Address;
}

/**
 * Where `ensureLocalContracts` puts them on a fresh chain with its default mints: the deployer's
 * nonce 0 is the token, 1 and 2 its mints, 3 the oracle, 4 and 5 the feeds. docker-compose.yml names
 * them in advance.
 */
export const FRESH_CHAIN_CONTRACTS = {
  usdtAddress: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
  sanctionsOracleAddress: '0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9',
  brlUsdFeedAddress: '0xDc64a140Aa3E981100a9becA4E685f962f0cF6C9',
  usdtUsdFeedAddress: '0x5FC8d32690cc91D4c39d9d3abcBD16989F875707',
} as const satisfies LocalContracts;

/**
 * The local feeds' first answers, at Chainlink's 8 decimals for USD pairs: about today's BRL/USD and
 * USDT/USD, so the local rate (1.0001 / 0.18 = 5.556 BRL per USDT) is realistic.
 */
export const LOCAL_FEEDS = {
  brlUsdFeedAddress: { decimals: 8, answer: 18_000_000n, description: 'BRL / USD' },
  usdtUsdFeedAddress: { decimals: 8, answer: 100_010_000n, description: 'USDT / USD' },
} as const;

/** The constructor arguments of a local feed: (decimals, initial answer, description). */
export const feedArgs = (feed: keyof typeof LOCAL_FEEDS) =>
  [LOCAL_FEEDS[feed].decimals, LOCAL_FEEDS[feed].answer, LOCAL_FEEDS[feed].description] as const;

const MINT_UNITS = 10_000_000n * 1_000_000n; // 10 million USDT each to the sandbox and the treasury

export interface EnsureLocalContractsOptions {
  /** Addresses an earlier run recorded (anvil state kept across restarts); each is kept while still there. */
  known?: Partial<LocalContracts>;
  /** Balances minted when the token is (re)deployed; default 10 million USDT to the sandbox and the treasury. */
  mints?: { to: Address; units: bigint }[];
}

/**
 * The local contracts, deployed by the anvil deployer (their owner) unless the chain already holds
 * them at the known addresses, built from today's source: a chain that lost a contract, or holds one
 * built from an older source (e.g. a token without the blocklist), gets a fresh deployment of it.
 * A kept feed keeps its answer and its time: `npm run local:feeds` refreshes it.
 */
export async function ensureLocalContracts(
  rpcUrl: string,
  opts: EnsureLocalContractsOptions = {},
): Promise<LocalContracts> {
  const client = createPublicClient({ transport: http(rpcUrl) });
  const deployerKey = anvilAccount('deployer').privateKey;
  // The token first: on a fresh chain this order is what puts both at FRESH_CHAIN_CONTRACTS.
  const usdtAddress =
    (await currentAt(client, 'TestUSDT', opts.known?.usdtAddress)) ??
    (await deployTestUsdt({ rpcUrl, deployerKey, mints: opts.mints ?? defaultMints() }));
  const sanctionsOracleAddress =
    (await currentAt(client, 'TestSanctionsOracle', opts.known?.sanctionsOracleAddress)) ??
    (await deployCompiled(await localSigner(rpcUrl, deployerKey), 'TestSanctionsOracle'));
  const feed = async (which: keyof typeof LOCAL_FEEDS) =>
    (await currentAt(client, 'TestPriceFeed', opts.known?.[which], feedArgs(which))) ??
    (await deployCompiled(await localSigner(rpcUrl, deployerKey), 'TestPriceFeed', feedArgs(which)));
  // One after the other: their order is their nonce, and so their address on a fresh chain.
  const brlUsdFeedAddress = await feed('brlUsdFeedAddress');
  const usdtUsdFeedAddress = await feed('usdtUsdFeedAddress');
  return { usdtAddress, sanctionsOracleAddress, brlUsdFeedAddress, usdtUsdFeedAddress };
}

/**
 * The addresses the local api and worker are given: a variable set in the launcher's environment
 * wins over the local contract (a developer pointing the stack at a contract of their own).
 */
export function localChainEnv(
  env: NodeJS.ProcessEnv,
  local: LocalContracts,
): {
  USDT_CONTRACT_ADDRESS: string;
  SANCTIONS_ORACLE_ADDRESS: string;
  PRICE_FEED_BRL_USD_ADDRESS: string;
  PRICE_FEED_USDT_USD_ADDRESS: string;
} {
  return {
    USDT_CONTRACT_ADDRESS: env.USDT_CONTRACT_ADDRESS || local.usdtAddress,
    SANCTIONS_ORACLE_ADDRESS: env.SANCTIONS_ORACLE_ADDRESS || local.sanctionsOracleAddress,
    PRICE_FEED_BRL_USD_ADDRESS: env.PRICE_FEED_BRL_USD_ADDRESS || local.brlUsdFeedAddress,
    PRICE_FEED_USDT_USD_ADDRESS: env.PRICE_FEED_USDT_USD_ADDRESS || local.usdtUsdFeedAddress,
  };
}

const recordFile = (dataDir: string) => path.join(dataDir, 'local-chain.json');

/** What `npm start` last ensured on its anvil (`<data dir>/local-chain.json`); empty before the first start. */
export function readLocalChainRecord(dataDir: string): Partial<LocalContracts> {
  const file = recordFile(dataDir);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Partial<LocalContracts>) : {};
}

export function writeLocalChainRecord(dataDir: string, contracts: LocalContracts): void {
  writeFileSync(recordFile(dataDir), JSON.stringify(contracts, null, 2));
}

/** `address` when the chain's code there is what deploying today's `name` from the deployer would leave. */
async function currentAt(
  client: PublicClient,
  name: LocalContractName,
  address: Address | undefined,
  args: readonly unknown[] = [],
): Promise<Address | undefined> {
  if (!address) return undefined;
  const onChain = await client.getCode({ address });
  if (!onChain || onChain === '0x') return undefined;
  // Running the creation code in a call returns the runtime code a deployment would store; from the
  // deployer, so the immutable owner baked into it matches too. Constructor arguments kept in storage
  // (a feed's answer) leave the runtime code alike whatever they are.
  const { abi, bytecode } = compileContract(name);
  const data: Hex = args.length > 0 ? encodeDeployData({ abi, bytecode, args }) : bytecode;
  const { data: built } = await client.call({ account: anvilAccount('deployer').address, data });
  return built?.toLowerCase() === onChain.toLowerCase() ? address : undefined;
}

function defaultMints(): { to: Address; units: bigint }[] {
  return [
    { to: anvilAccount('provider-sandbox').address, units: MINT_UNITS },
    { to: anvilAccount('treasury').address, units: MINT_UNITS },
  ];
}
