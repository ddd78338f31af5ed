import {
  encodeFunctionData,
  isHash,
  parseEventLogs,
  TransactionReceiptNotFoundError,
  type Address,
  type Hex,
} from 'viem';
import { callNode, toChainError } from './chain-error';
import { isMissingFunction } from './contract-errors';
import { rpcClient, sameAddress, type LedgerNode } from './ledger-node';
import type { UsdtLedger } from './ledger-types';
import { IS_BLOCKED_ABI, TRANSFER_EVENT, USDT_ABI } from './usdt-abi';

export type LedgerReads = Pick<
  UsdtLedger,
  | 'balanceOf'
  | 'nextNonce'
  | 'finalizedNonce'
  | 'minedNonce'
  | 'hasReceipt'
  | 'receiptFinality'
  | 'knowsTransaction'
  | 'senderHealth'
  | 'verifyTransfer'
>;

/** What the ledger reads from the chain: balances, nonces, receipts, the sender's health and transfers. */
export function createLedgerReads({
  rpc,
  usdt,
  requireTreasury,
  ensureReady,
  findTransaction,
}: LedgerNode): LedgerReads {
  /** The transaction's receipt, or undefined while it is not mined (as far as this node knows). */
  const receiptOf = (txHash: Hex) =>
    callNode('eth_getTransactionReceipt', () =>
      rpc.getTransactionReceipt({ hash: txHash }).catch((err: unknown) => {
        if (err instanceof TransactionReceiptNotFoundError) return undefined;
        throw err;
      }),
    );

  return {
    async balanceOf(owner) {
      await ensureReady();
      return callNode('balanceOf', () =>
        rpc.readContract({ address: usdt, abi: USDT_ABI, functionName: 'balanceOf', args: [owner] }),
      );
    },

    async nextNonce(account) {
      const address = account ?? requireTreasury().address;
      await ensureReady();
      return callNode('eth_getTransactionCount', () =>
        rpc.getTransactionCount({ address, blockTag: 'pending' }),
      );
    },

    async finalizedNonce(account) {
      const address = account ?? requireTreasury().address;
      await ensureReady();
      return callNode('eth_getTransactionCount', () =>
        rpc.getTransactionCount({ address, blockTag: 'finalized' }),
      );
    },

    async minedNonce(account) {
      const address = account ?? requireTreasury().address;
      await ensureReady();
      return callNode('eth_getTransactionCount', () =>
        rpc.getTransactionCount({ address, blockTag: 'latest' }),
      );
    },

    async hasReceipt(txHash) {
      await ensureReady();
      const receipt = await receiptOf(txHash);
      return receipt !== undefined;
    },

    async receiptFinality(txHash) {
      await ensureReady();
      const receipt = await receiptOf(txHash);
      if (receipt === undefined) return 'none';
      // Final: its block at or below `finalized`, and still the chain's block at that height (a node
      // on an orphaned fork answers a receipt whose block the chain no longer has).
      const [finalized, block] = await Promise.all([
        callNode('eth_getBlockByNumber', () => rpc.getBlock({ blockTag: 'finalized' })),
        callNode('eth_getBlockByNumber', () => rpc.getBlock({ blockNumber: receipt.blockNumber })),
      ]);
      return finalized.number >= receipt.blockNumber && block.hash === receipt.blockHash ? 'final' : 'mined';
    },

    async knowsTransaction(txHash) {
      await ensureReady();
      return (await findTransaction(txHash)) !== undefined;
    },

    async senderHealth(sender) {
      await ensureReady();
      const blocked = await callNode('isBlocked', () =>
        rpc
          .readContract({ address: usdt, abi: IS_BLOCKED_ABI, functionName: 'isBlocked', args: [sender] })
          .catch((err: unknown) => {
            // A token without a blocklist: the simulation below still finds a sender that cannot send.
            if (isMissingFunction(err)) return undefined;
            throw err;
          }),
      );
      if (blocked) {
        return {
          ok: false,
          reason: 'blocked_by_issuer',
          detail: `${sender} is on the blocklist of the token ${usdt} (isBlocked)`,
        };
      }
      // Zero units to itself: nothing a receiver or an amount could refuse, so a revert is the sender's.
      const data = encodeFunctionData({ abi: USDT_ABI, functionName: 'transfer', args: [sender, 0n] });
      try {
        await rpc.call({ account: sender, to: usdt, data });
      } catch (err) {
        const error = toChainError(err, 'eth_call transfer');
        if (error.kind !== 'reverted') throw error;
        return {
          ok: false,
          reason: 'cannot_send',
          detail: `a transfer from ${sender} reverts: ${error.message}`,
        };
      }
      return { ok: true };
    },

    async verifyTransfer({ txHash, to, amountUnits, minConfirmations }) {
      // The hash comes from the provider: garbage can never match, and the node would answer "invalid params".
      if (!isHash(txHash)) {
        return { status: 'mismatch', reason: `tx hash ${txHash} is not a 32-byte hex string` };
      }
      await ensureReady();

      const receipt = await receiptOf(txHash);
      if (!receipt) {
        return (await findTransaction(txHash))
          ? { status: 'pending', confirmations: 0, mined: false }
          : { status: 'not_found' };
      }
      if (receipt.status !== 'success') {
        const finalized = await callNode('eth_getBlockByNumber', () =>
          rpc.getBlock({ blockTag: 'finalized' }),
        );
        return {
          status: 'reverted',
          blockNumber: receipt.blockNumber,
          confirmations: await confirmationsOf(receipt.blockNumber),
          final: finalized.number >= receipt.blockNumber,
        };
      }

      // Any contract can emit an event named Transfer: only logs from the token contract itself count.
      const transfers = parseEventLogs({ abi: USDT_ABI, eventName: 'Transfer', logs: receipt.logs }).filter(
        (log) => sameAddress(log.address, usdt),
      );
      const matched = transfers.filter((t) => sameAddress(t.args.to, to) && t.args.value === amountUnits);
      if (matched.length === 0) {
        const seen = transfers.map((t) => `${t.args.value} units to ${t.args.to}`).join(', ') || 'none';
        return {
          status: 'mismatch',
          reason: `no USDT Transfer of ${amountUnits} units to ${to} in ${txHash} (USDT transfers seen: ${seen})`,
        };
      }

      const confirmations = await confirmationsOf(receipt.blockNumber);
      return confirmations >= minConfirmations && confirmations > 0
        ? {
            status: 'confirmed',
            blockNumber: receipt.blockNumber,
            confirmations,
            logIndexes: matched.map((t) => t.logIndex),
          }
        : { status: 'pending', confirmations, mined: true };
    },
  };

  async function confirmationsOf(blockNumber: bigint): Promise<number> {
    // cacheTime 0: viem otherwise serves a block number up to 4 s old.
    const latest = await callNode('eth_blockNumber', () => rpc.getBlockNumber({ cacheTime: 0 }));
    // A load-balanced RPC may answer from a node a block behind the one that gave the receipt: clamp at 0.
    return Math.max(0, Number(latest - blockNumber + 1n));
  }
}

/**
 * Every USDT Transfer to `to` since `fromBlock` (default genesis). Scans logs over the whole range, so it is
 * meant for the local chain and tests (e.g. proving a payout moved USDT exactly once), not a public RPC.
 */
export async function countTransfersTo(opts: {
  rpcUrl: string;
  usdtAddress: Address;
  to: Address;
  fromBlock?: bigint;
}): Promise<{ count: number; total: bigint; txHashes: Hex[] }> {
  const logs = await callNode('eth_getLogs', () =>
    rpcClient(opts.rpcUrl).getLogs({
      address: opts.usdtAddress,
      event: TRANSFER_EVENT,
      args: { to: opts.to },
      fromBlock: opts.fromBlock ?? 0n,
      toBlock: 'latest',
      strict: true,
    }),
  );
  return {
    count: logs.length,
    total: logs.reduce((sum, log) => sum + log.args.value, 0n),
    txHashes: logs.map((log) => log.transactionHash),
  };
}
