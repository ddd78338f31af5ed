import { ensureTestUsdt } from './test-usdt';

/**
 * docker-compose's one-shot `chain-setup` service: deploys the USDT test token on the compose anvil
 * unless it is already there. On a fresh anvil the deployer's first contract always lands at the
 * same address, which is why docker-compose.yml can name it in advance.
 */
export const EXPECTED_ADDRESS = '0x5FbDB2315678afecb367f032d93F642f64180aa3';

async function main(): Promise<void> {
  const rpcUrl = process.env.EVM_RPC_URL ?? 'http://127.0.0.1:8545';
  const address = await ensureTestUsdt(rpcUrl, EXPECTED_ADDRESS);
  if (address.toLowerCase() !== EXPECTED_ADDRESS.toLowerCase()) {
    throw new Error(
      `token deployed at ${address}, not ${EXPECTED_ADDRESS}: was anvil fresh? set USDT_CONTRACT_ADDRESS`,
    );
  }
  process.stdout.write(`USDT test token ready at ${address}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`chain setup failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
