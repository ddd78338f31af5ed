import {
  encodeFunctionData,
  keccak256,
  parseTransaction,
  recoverTransactionAddress,
  type Hex,
  type TransactionSerialized,
} from 'viem';
import { callNode, ChainError, isAlreadyKnown, toChainError } from './chain-error';
import { sameAddress, type LedgerNode } from './ledger-node';
import type { FeeCaps, UsdtLedger } from './ledger-types';
import { USDT_ABI } from './usdt-abi';

export type LedgerSends = Pick<UsdtLedger, 'signTransfer' | 'signReplacement' | 'signCancel' | 'broadcast'>;

/** The most a signed transaction can cost in gas: its gas limit at its fee cap (wei). */
export function maxGasCostOf(rawTransaction: Hex): bigint {
  const tx = parseTransaction(rawTransaction);
  return (tx.gas ?? 0n) * (tx.maxFeePerGas ?? tx.gasPrice ?? 0n);
}

/** At least 10% more (rounded up, and at least 1 wei more): what geth-like pools require of a replacement. */
const bumped = (fee: bigint) => {
  const raised = (fee * 110n + 99n) / 100n;
  return raised > fee ? raised : fee + 1n;
};
const max = (a: bigint, b: bigint) => (a > b ? a : b);

/** The network asks no more than `offered`: raising it would not make it land sooner. */
const asksNoMore = (market: FeeCaps, offered: FeeCaps) =>
  market.maxFeePerGas <= offered.maxFeePerGas && market.maxPriorityFeePerGas <= offered.maxPriorityFeePerGas;

/** What a transaction replacing one at the same nonce offers: 10% over the old fees, or today's if higher. */
function replacementFees(old: FeeCaps, market: FeeCaps): FeeCaps {
  const tip = max(bumped(old.maxPriorityFeePerGas), market.maxPriorityFeePerGas);
  return {
    maxPriorityFeePerGas: tip,
    maxFeePerGas: max(max(bumped(old.maxFeePerGas), market.maxFeePerGas), tip),
  };
}

/**
 * What the ledger sends: treasury transfers signed (first, or again at the same nonce with higher fees)
 * and broadcast. `balanceOf` is the ledger's own read, checked before anything is signed.
 */
export function createLedgerSends(
  { rpc, chainId, usdt, requireTreasury, ensureReady, findTransaction }: LedgerNode,
  balanceOf: UsdtLedger['balanceOf'],
): LedgerSends {
  return {
    async signTransfer({ to, amountUnits, nonce, reserved = { usdtUnits: 0n, gasWei: 0n } }) {
      const account = requireTreasury();
      await ensureReady();
      const data = encodeFunctionData({ abi: USDT_ABI, functionName: 'transfer', args: [to, amountUnits] });

      // Read after the caller's mined nonce (which decides what is reserved): a transfer mined in
      // between is then both reserved and already off the balance, counted twice, never zero times.
      const [balance, weiBalance] = await Promise.all([
        balanceOf(account.address),
        callNode('eth_getBalance', () => rpc.getBalance({ address: account.address })),
      ]);
      if (balance < reserved.usdtUnits + amountUnits) {
        const message =
          `treasury ${account.address} holds ${balance} USDT units, needs ${amountUnits}` +
          ` plus ${reserved.usdtUnits} for transfers signed and not yet mined`;
        throw new ChainError(message, { kind: 'insufficient_funds' });
      }
      const [gas, fees] = await Promise.all([
        callNode('eth_estimateGas', () => rpc.estimateGas({ account: account.address, to: usdt, data })),
        marketFees(),
      ]);
      // 50% over the gas estimate (Arbitrum's estimate moves with L1 prices); unused gas is not charged.
      const gasLimit = (gas * 3n) / 2n;
      const gasWei = gasLimit * fees.maxFeePerGas;
      if (weiBalance < reserved.gasWei + gasWei) {
        const message =
          `treasury ${account.address} holds ${weiBalance} wei, needs up to ${gasWei} for gas` +
          ` plus ${reserved.gasWei} for transfers signed and not yet mined`;
        throw new ChainError(message, { kind: 'insufficient_funds' });
      }

      const rawTransaction = await account.signTransaction({
        type: 'eip1559',
        chainId,
        to: usdt,
        data,
        nonce,
        gas: gasLimit,
        ...fees,
      });
      return { rawTransaction, txHash: keccak256(rawTransaction) };
    },

    async signReplacement(oldRaw) {
      const { account, old, oldFees } = await ownTransfer(oldRaw);
      const market = await marketFees();
      if (asksNoMore(market, oldFees)) return null;
      const newFees = replacementFees(oldFees, market);
      // Same nonce, recipient, calldata and gas limit: only one of the two can ever be mined, and
      // whichever is moves the same USDT.
      const rawTransaction = await account.signTransaction({
        type: 'eip1559',
        chainId,
        to: usdt,
        data: old.data,
        nonce: old.nonce,
        gas: old.gas,
        ...newFees,
      });
      return { rawTransaction, txHash: keccak256(rawTransaction), fees: { old: oldFees, new: newFees } };
    },

    async signCancel(transferRaw, replacing) {
      const { account, old, oldFees } = await ownTransfer(transferRaw);
      const market = await marketFees();
      let over = oldFees;
      if (replacing !== undefined) {
        const earlier = parseTransaction(replacing);
        over = {
          maxFeePerGas: earlier.maxFeePerGas ?? 0n,
          maxPriorityFeePerGas: earlier.maxPriorityFeePerGas ?? 0n,
        };
        // As for a transfer: raised only when the network now asks more than the cancel offers.
        if (asksNoMore(market, over)) return null;
      }
      const newFees = replacementFees(over, market);
      // To the treasury itself, no value, no calldata, at the transfer's nonce: mined, it spends the
      // nonce and moves nothing. The transfer's gas limit covers it (unused gas is not charged).
      const rawTransaction = await account.signTransaction({
        type: 'eip1559',
        chainId,
        to: account.address,
        value: 0n,
        nonce: old.nonce!,
        gas: old.gas,
        ...newFees,
      });
      return { rawTransaction, txHash: keccak256(rawTransaction), fees: { old: over, new: newFees } };
    },

    async broadcast(rawTransaction) {
      await ensureReady();
      const hash = keccak256(rawTransaction);
      try {
        return await rpc.sendRawTransaction({ serializedTransaction: rawTransaction });
      } catch (err) {
        const error = toChainError(err, 'eth_sendRawTransaction');
        if (error.kind === 'network') throw error;
        // A resend after a crash or retry: the node already pools it ("already known") or has mined it
        // ("nonce too low"). Asking for the hash tells that apart from another tx holding the nonce.
        if (await findTransaction(hash)) return hash;
        if (isAlreadyKnown(err)) return hash;
        throw error;
      }
    },
  };

  /** A USDT transfer this service's treasury key signed, with its fees: what may be replaced or cancelled. */
  async function ownTransfer(oldRaw: Hex) {
    const account = requireTreasury();
    await ensureReady();
    const old = parseTransaction(oldRaw);
    if (
      old.type !== 'eip1559' ||
      old.to === undefined ||
      old.to === null ||
      !sameAddress(old.to, usdt) ||
      old.chainId !== chainId ||
      old.nonce === undefined ||
      // Signed by another key (one rotated out): a "replacement" from this key would be a second
      // transaction, from another account, that could land beside the first.
      !sameAddress(
        await recoverTransactionAddress({ serializedTransaction: oldRaw as TransactionSerialized }),
        account.address,
      )
    ) {
      throw new ChainError('not a treasury USDT transfer signed by this service', { kind: 'invalid' });
    }
    const oldFees: FeeCaps = {
      maxFeePerGas: old.maxFeePerGas ?? 0n,
      maxPriorityFeePerGas: old.maxPriorityFeePerGas ?? 0n,
    };
    return { account, old, oldFees };
  }

  /**
   * The fee caps a transaction is signed with today: twice the latest base fee plus the suggested tip,
   * headroom for the base fee to rise while it waits (unused headroom is not charged).
   */
  async function marketFees(): Promise<FeeCaps> {
    const [block, tip] = await Promise.all([
      callNode('eth_getBlockByNumber', () => rpc.getBlock({ blockTag: 'latest' })),
      callNode('eth_maxPriorityFeePerGas', () => rpc.estimateMaxPriorityFeePerGas()),
    ]);
    return { maxFeePerGas: (block.baseFeePerGas ?? 0n) * 2n + tip, maxPriorityFeePerGas: tip };
  }
}
