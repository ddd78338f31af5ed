import { getAddress, isAddress, type Address } from 'viem';
import { repoRoot } from './infra/temporal-binaries';
import { FRESH_CHAIN_CONTRACTS, readLocalChainRecord } from './local-contracts';
import {
  blockOnToken,
  sanctionOnOracle,
  screeningStatus,
  unblockOnToken,
  unsanctionOnOracle,
  type ScreeningContracts,
} from './screening-lists';
import { stackSettings } from './stack-settings';

// `npm run local:screening -- <action> <wallet>`: puts a wallet on (or takes it off) the local
// token's blocklist or the test sanctions oracle, as the issuer or Chainalysis would on Arbitrum One,
// then prints what the service's screening now reads for it. Local chain only: it signs with the
// anvil deployer's public key.

const ACTIONS = {
  block: (rpc: string, c: ScreeningContracts, w: Address) => blockOnToken(rpc, c.usdtAddress, w),
  unblock: (rpc: string, c: ScreeningContracts, w: Address) => unblockOnToken(rpc, c.usdtAddress, w),
  sanction: (rpc: string, c: ScreeningContracts, w: Address) =>
    sanctionOnOracle(rpc, c.sanctionsOracleAddress, w),
  unsanction: (rpc: string, c: ScreeningContracts, w: Address) =>
    unsanctionOnOracle(rpc, c.sanctionsOracleAddress, w),
  status: async () => {},
} as const;

const USAGE = `usage: npm run local:screening -- <${Object.keys(ACTIONS).join('|')}> <wallet>`;

async function main(): Promise<void> {
  const [action, wallet] = process.argv.slice(2);
  if (!action || !(action in ACTIONS) || !wallet || !isAddress(wallet)) throw new Error(USAGE);
  const settings = stackSettings(repoRoot());
  const rpcUrl = process.env.EVM_RPC_URL || `http://127.0.0.1:${settings.anvilPort}`;
  // npm start's record of its chain; without one (docker compose's chain) the fresh-chain addresses.
  const recorded = { ...FRESH_CHAIN_CONTRACTS, ...readLocalChainRecord(settings.dataDir) };
  const contracts: ScreeningContracts = {
    usdtAddress: getAddress(process.env.USDT_CONTRACT_ADDRESS || recorded.usdtAddress),
    sanctionsOracleAddress: getAddress(
      process.env.SANCTIONS_ORACLE_ADDRESS || recorded.sanctionsOracleAddress,
    ),
  };
  const target = getAddress(wallet);
  await ACTIONS[action as keyof typeof ACTIONS](rpcUrl, contracts, target);
  const { blocked, sanctioned } = await screeningStatus(rpcUrl, contracts, target);
  process.stdout.write(
    `${target}: ${blocked ? 'blocked' : 'not blocked'} on USDT ${contracts.usdtAddress}, ` +
      `${sanctioned ? 'sanctioned' : 'not sanctioned'} on oracle ${contracts.sanctionsOracleAddress}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
