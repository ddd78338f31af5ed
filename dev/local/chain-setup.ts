import { ensureLocalContracts, FRESH_CHAIN_CONTRACTS } from './local-contracts';

/**
 * docker-compose's one-shot `chain-setup` service: deploys the USDT test token, the test sanctions
 * oracle and the test price feeds on the compose anvil unless they are already there. On a fresh anvil the
 * deployer's contracts always land at the same addresses (FRESH_CHAIN_CONTRACTS), which is why
 * docker-compose.yml can name them in advance.
 */
async function main(): Promise<void> {
  const rpcUrl = process.env.EVM_RPC_URL ?? 'http://127.0.0.1:8545';
  const deployed = await ensureLocalContracts(rpcUrl, { known: FRESH_CHAIN_CONTRACTS });
  for (const [name, variable] of [
    ['usdtAddress', 'USDT_CONTRACT_ADDRESS'],
    ['sanctionsOracleAddress', 'SANCTIONS_ORACLE_ADDRESS'],
    ['brlUsdFeedAddress', 'PRICE_FEED_BRL_USD_ADDRESS'],
    ['usdtUsdFeedAddress', 'PRICE_FEED_USDT_USD_ADDRESS'],
  ] as const) {
    if (deployed[name].toLowerCase() !== FRESH_CHAIN_CONTRACTS[name].toLowerCase()) {
      throw new Error(
        `${name} deployed at ${deployed[name]}, not ${FRESH_CHAIN_CONTRACTS[name]}: was anvil fresh? set ${variable}`,
      );
    }
  }
  process.stdout.write(
    `USDT test token ready at ${deployed.usdtAddress}, sanctions oracle at ${deployed.sanctionsOracleAddress}, ` +
      `price feeds BRL/USD at ${deployed.brlUsdFeedAddress} and USDT/USD at ${deployed.usdtUsdFeedAddress}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`chain setup failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
