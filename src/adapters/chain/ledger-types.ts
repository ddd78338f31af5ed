import type { Address, Hex } from 'viem';

/** The USDT ledger as its users see it (activities, treasury health, gauges): what it answers and does. */

export type TransferCheck =
  /**
   * logIndexes: the positions in the block of every USDT Transfer in the transaction that matches
   * (receiver, amount), in log order; with the hash, each names one transfer. One transaction may
   * carry several (a batch paying several payouts alike), and each settles one payout.
   */
  | { status: 'confirmed'; blockNumber: bigint; confirmations: number; logIndexes: number[] }
  /** Mined with fewer confirmations than required (mined), or still waiting in the node's pool (not mined, 0). */
  | { status: 'pending'; confirmations: number; mined: boolean }
  /** No such transaction known to the node. */
  | { status: 'not_found' }
  /**
   * Mined and reverted: no USDT moved, and the transaction's nonce is used up. Proof of that only once
   * `final` (its block at or below the chain's `finalized`): before, a reorganisation may mine the
   * same transaction again in another state, where it may succeed.
   */
  | { status: 'reverted'; blockNumber: bigint; confirmations: number; final: boolean }
  /** Mined OK, but no USDT Transfer(to, amount) emitted by the token contract. */
  | { status: 'mismatch'; reason: string };

export interface UsdtLedger {
  chainId: number;
  verifyTransfer(args: {
    txHash: Hex;
    to: Address;
    amountUnits: bigint;
    minConfirmations: number;
  }): Promise<TransferCheck>;
  /**
   * Signs USDT.transfer with the treasury key. The caller persists the raw tx and only ever rebroadcasts
   * it (or a replacement from signReplacement). Refused (insufficient_funds) unless the treasury's USDT
   * and ETH cover this transfer plus `reserved`: what transfers signed and not yet mined may still spend.
   */
  signTransfer(args: {
    to: Address;
    amountUnits: bigint;
    nonce: number;
    reserved?: { usdtUnits: bigint; gasWei: bigint };
  }): Promise<{ rawTransaction: Hex; txHash: Hex }>;
  /**
   * The same transfer at the same nonce with higher fees, for a transaction that has waited unmined:
   * each fee at least 10% over the old one (the pool's replacement rule) or today's, whichever is
   * higher. Null when the network asks no more than the old transaction already offers: raising it
   * then would not make it land sooner, and repeated raises would compound without bound.
   */
  signReplacement(rawTransaction: Hex): Promise<ReplacementTransaction | null>;
  /**
   * A cancel of the transfer: a transaction from the treasury to itself, no value, at the same nonce,
   * each fee at least 10% over the old one or today's, whichever is higher. Only one of the two can be
   * mined; the cancel moves no USDT. `replacing`: an earlier cancel, raised the same way, or null
   * (as signReplacement) when the network asks no more than it offers.
   */
  signCancel(transferRaw: Hex, replacing?: Hex): Promise<ReplacementTransaction | null>;
  /** Idempotent: a tx the node already has (pooled or mined) counts as sent. Returns the tx hash. */
  broadcast(rawTransaction: Hex): Promise<Hex>;
  /**
   * The treasury's next nonce, counting transactions in the pool that can run (none missing below
   * them); `account` reads another sender's (a treasury key used before a rotation).
   */
  nextNonce(account?: Address): Promise<number>;
  /** The treasury's nonce as of the finalized block: transactions below it can never be replaced. */
  finalizedNonce(account?: Address): Promise<number>;
  /** The treasury's nonce as of the latest block: its transactions below it are mined (and paid for). */
  minedNonce(account?: Address): Promise<number>;
  /** Whether the node has a receipt for this transaction (it was mined). */
  hasReceipt(txHash: Hex): Promise<boolean>;
  /** Whether this transaction is mined, and whether its block is final (at or below `finalized`, canonical). */
  receiptFinality(txHash: Hex): Promise<'none' | 'mined' | 'final'>;
  /** Whether the node knows this transaction at all: mined, waiting in its pool, or queued behind a gap. */
  knowsTransaction(txHash: Hex): Promise<boolean>;
  /**
   * Whether `sender` can send the token now: not on the issuer's blocklist (when the token has one),
   * and a transfer from it does not revert. Throws a ChainError when the chain cannot tell.
   */
  senderHealth(sender: Address): Promise<SenderHealth>;
  treasuryAddress(): Address | undefined;
  balanceOf(owner: Address): Promise<bigint>;
}

/**
 * What the token answers about a sender: it can send, or it cannot because the issuer blocked it
 * (`isBlocked`), or because every transfer from it reverts (a block the token does not expose, a
 * paused token). Neither is about a receiver or an amount.
 */
export type SenderHealth = { ok: true } | { ok: false; reason: SenderProblem; detail: string };
export type SenderProblem = 'blocked_by_issuer' | 'cannot_send';
export const SENDER_PROBLEMS: readonly SenderProblem[] = ['blocked_by_issuer', 'cannot_send'];

export interface ReplacementTransaction {
  rawTransaction: Hex;
  txHash: Hex;
  /** The old and new fees, for the log. */
  fees: { old: FeeCaps; new: FeeCaps };
}

export interface FeeCaps {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}
