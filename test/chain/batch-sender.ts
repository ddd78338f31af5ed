import { createPublicClient, createWalletClient, http, type Abi, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { compileContract } from '../../dev/local/compile-contracts';

// A test-only contract that pays several (receiver, amount) pairs in one transaction, as a batching
// payer would: one transaction, several USDT Transfer logs. Compiled here with solc-js (a
// devDependency, no download), never deployed anywhere but the test's anvil.
const SOURCE = `
// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

interface IERC20 {
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}

contract BatchSender {
    function send(address token, address[] calldata to, uint256[] calldata amounts) external {
        require(to.length == amounts.length, "length");
        for (uint256 i = 0; i < to.length; i++) {
            require(IERC20(token).transferFrom(msg.sender, to[i], amounts[i]), "transfer");
        }
    }
}
`;

let compiled: { abi: Abi; bytecode: Hex } | undefined;

function compile(): { abi: Abi; bytecode: Hex } {
  if (compiled) return compiled;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const solc = require('solc') as { compile(input: string): string };
  const input = {
    language: 'Solidity',
    sources: { 'BatchSender.sol': { content: SOURCE } },
    settings: {
      evmVersion: 'cancun',
      outputSelection: { 'BatchSender.sol': { BatchSender: ['abi', 'evm.bytecode.object'] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const contract = output.contracts?.['BatchSender.sol']?.BatchSender;
  if (!contract) throw new Error('solc produced no BatchSender');
  compiled = { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` };
  return compiled;
}

/**
 * Deploys a BatchSender, lets it spend the payer's USDT, and returns a function that pays every
 * (to, units) in one transaction; it resolves with the hash once mined.
 */
export async function deployBatchSender(opts: {
  rpcUrl: string;
  usdt: Address;
  payerKey: Hex;
}): Promise<(payments: { to: Address; units: bigint }[]) => Promise<Hex>> {
  const { abi, bytecode } = compile();
  const rpc = createPublicClient({ transport: http(opts.rpcUrl) });
  const wallet = createWalletClient({
    account: privateKeyToAccount(opts.payerKey),
    transport: http(opts.rpcUrl),
  });
  const deployHash = await wallet.deployContract({ abi, bytecode, chain: null });
  const deployed = await rpc.waitForTransactionReceipt({ hash: deployHash, pollingInterval: 50 });
  const sender = deployed.contractAddress!;
  const approveHash = await wallet.writeContract({
    address: opts.usdt,
    // The service's ABI has no approve (it never needs one): the test token's full ABI does.
    abi: compileContract('TestUSDT').abi,
    functionName: 'approve',
    args: [sender, 2n ** 256n - 1n],
    chain: null,
  } as never);
  await rpc.waitForTransactionReceipt({ hash: approveHash, pollingInterval: 50 });
  return async (payments) => {
    const hash = await wallet.writeContract({
      address: sender,
      abi,
      functionName: 'send',
      args: [opts.usdt, payments.map((p) => p.to), payments.map((p) => p.units)],
      chain: null,
    });
    const receipt = await rpc.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (receipt.status !== 'success') throw new Error(`batch transfer ${hash} reverted`);
    return hash;
  };
}
