import { redactUrls } from '../../domain/url-redaction';
import {
  BaseError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  createPublicClient,
  encodeFunctionData,
  http,
  isHash,
  keccak256,
  parseEventLogs,
  parseTransaction,
  recoverTransactionAddress,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
  type Address,
  type Hex,
  type PublicClient,
  type TransactionSerialized,
} from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { IS_BLOCKED_ABI, TRANSFER_EVENT, USDT_ABI } from './usdt-abi';

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
  /** Mined and reverted: no USDT moved, and the transaction's nonce is used up. */
  | { status: 'reverted'; blockNumber: bigint; confirmations: number }
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

export interface UsdtLedgerOptions {
  rpcUrl: string;
  chainId: number;
  usdtAddress: Address;
  treasuryPrivateKey?: Hex;
}

export type ChainErrorKind =
  | 'network' // node unreachable, timeout, rate limit, 5xx: try again
  | 'config' // wrong chain id, no token contract, no treasury key
  | 'insufficient_funds' // treasury lacks gas money or USDT
  | 'nonce_conflict' // another transaction holds this nonce
  | 'reverted' // the call would revert
  | 'invalid' // the node refuses the transaction itself (malformed, gas too low, ...)
  | 'unknown';

/** A node/RPC failure, classified so the caller (a Temporal activity) knows whether a retry can help. */
export class ChainError extends Error {
  override readonly name = 'ChainError';
  readonly kind: ChainErrorKind;
  readonly retryable: boolean;

  constructor(message: string, opts: { kind: ChainErrorKind; retryable?: boolean; cause?: unknown }) {
    super(message, { cause: opts.cause });
    this.kind = opts.kind;
    // Unknown failures default to retryable: every operation here is a read or an idempotent rebroadcast,
    // so retrying cannot move money twice, while giving up could fail a payout over a passing hiccup.
    this.retryable = opts.retryable ?? (opts.kind === 'network' || opts.kind === 'unknown');
  }
}

// Node error texts differ per client (geth/nitro: "already known", anvil: "transaction already imported",
// nethermind: "AlreadyKnown", erigon: "ALREADY_EXISTS"), hence loose patterns.
const ALREADY_KNOWN = /already known|already imported|alreadyknown|already exists|known transaction/i;
const CLASSIFIERS: [RegExp, ChainErrorKind][] = [
  [/insufficient funds|insufficient balance|ERC20InsufficientBalance/i, 'insufficient_funds'],
  [
    /nonce too low|nonce has already been used|replacement transaction underpriced|already used/i,
    'nonce_conflict',
  ],
  [/execution reverted|reverted/i, 'reverted'],
  [
    /failed to decode|invalid sender|invalid chain ?id|intrinsic gas too low|exceeds block gas limit|transaction type not supported|oversized data|invalid params|invalid parameters/i,
    'invalid',
  ],
  [
    /HttpRequestError|TimeoutError|SocketClosedError|LimitExceededRpcError|ResourceUnavailableRpcError|fetch failed|timed out|econnrefused|econnreset|socket hang up|too many requests|rate limit/i,
    'network',
  ],
];

/** Flattens an error and its causes (viem nests the node's own message in `details`) into one text. */
function errorText(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e && depth < 10; e = (e as { cause?: unknown }).cause, depth++) {
    const { name, message, details, shortMessage } = e as Record<string, unknown>;
    for (const p of [name, shortMessage, details, message]) if (typeof p === 'string') parts.push(p);
  }
  return parts.join(' | ');
}

export function toChainError(err: unknown, action: string): ChainError {
  if (err instanceof ChainError) return err;
  const text = errorText(err);
  const kind = CLASSIFIERS.find(([re]) => re.test(text))?.[1] ?? 'unknown';
  const detail = (err as { details?: unknown }).details ?? (err as Error).message ?? String(err);
  return new ChainError(`${action} failed (${kind}): ${String(detail)}`, { kind, cause: err });
}

async function call<T>(action: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toChainError(err, action);
  }
}

function client(rpcUrl: string): PublicClient {
  // Modest transport retries: Temporal retries the activity anyway, and an activity must not hang for minutes.
  return createPublicClient({ transport: http(rpcUrl, { timeout: 10_000, retryCount: 2 }) });
}

const sameAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** The contract answered, but not with the function: no code there, or a revert (no such selector). */
function isMissingFunction(err: unknown): boolean {
  if (!(err instanceof BaseError)) return false;
  return (
    err.walk(
      (e) => e instanceof ContractFunctionZeroDataError || e instanceof ContractFunctionRevertedError,
    ) !== null
  );
}

export function createUsdtLedger(opts: UsdtLedgerOptions): UsdtLedger {
  const rpc = client(opts.rpcUrl);
  const usdt = opts.usdtAddress;
  const treasury: PrivateKeyAccount | undefined = opts.treasuryPrivateKey
    ? privateKeyToAccount(opts.treasuryPrivateKey)
    : undefined;

  // Checked once on first use (creation stays synchronous). A wrong chain would mean signing for, or
  // trusting receipts from, the wrong network; a missing contract means the USDT address is misconfigured.
  let ready: Promise<void> | undefined;
  const ensureReady = () => {
    ready ??= (async () => {
      const nodeChainId = await call('eth_chainId', () => rpc.getChainId());
      if (nodeChainId !== opts.chainId) {
        throw new ChainError(
          `chain id mismatch: ${redactUrls(opts.rpcUrl)} serves chain ${nodeChainId}, configured chain is ${opts.chainId}`,
          { kind: 'config' },
        );
      }
      const code = await call('eth_getCode', () => rpc.getCode({ address: usdt }));
      if (!code || code === '0x') {
        throw new ChainError(`no contract at USDT address ${usdt} on chain ${nodeChainId}`, {
          kind: 'config',
        });
      }
    })().catch((err: unknown) => {
      ready = undefined; // a node that was down, or a token deployed later, gets another look next time
      throw err;
    });
    return ready;
  };

  const findTransaction = (hash: Hex) =>
    call('eth_getTransactionByHash', () =>
      rpc.getTransaction({ hash }).catch((err: unknown) => {
        if (err instanceof TransactionNotFoundError) return undefined;
        throw err;
      }),
    );

  const ledger: UsdtLedger = {
    chainId: opts.chainId,

    treasuryAddress: () => treasury?.address,

    async balanceOf(owner) {
      await ensureReady();
      return call('balanceOf', () =>
        rpc.readContract({ address: usdt, abi: USDT_ABI, functionName: 'balanceOf', args: [owner] }),
      );
    },

    async nextNonce(account) {
      const address = account ?? requireTreasury().address;
      await ensureReady();
      return call('eth_getTransactionCount', () => rpc.getTransactionCount({ address, blockTag: 'pending' }));
    },

    async finalizedNonce(account) {
      const address = account ?? requireTreasury().address;
      await ensureReady();
      return call('eth_getTransactionCount', () =>
        rpc.getTransactionCount({ address, blockTag: 'finalized' }),
      );
    },

    async minedNonce(account) {
      const address = account ?? requireTreasury().address;
      await ensureReady();
      return call('eth_getTransactionCount', () => rpc.getTransactionCount({ address, blockTag: 'latest' }));
    },

    async hasReceipt(txHash) {
      await ensureReady();
      const receipt = await call('eth_getTransactionReceipt', () =>
        rpc.getTransactionReceipt({ hash: txHash }).catch((err: unknown) => {
          if (err instanceof TransactionReceiptNotFoundError) return undefined;
          throw err;
        }),
      );
      return receipt !== undefined;
    },

    async knowsTransaction(txHash) {
      await ensureReady();
      return (await findTransaction(txHash)) !== undefined;
    },

    async senderHealth(sender) {
      await ensureReady();
      const blocked = await call('isBlocked', () =>
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

      const receipt = await call('eth_getTransactionReceipt', () =>
        rpc.getTransactionReceipt({ hash: txHash }).catch((err: unknown) => {
          if (err instanceof TransactionReceiptNotFoundError) return undefined;
          throw err;
        }),
      );
      if (!receipt) {
        return (await findTransaction(txHash))
          ? { status: 'pending', confirmations: 0, mined: false }
          : { status: 'not_found' };
      }
      if (receipt.status !== 'success') {
        return {
          status: 'reverted',
          blockNumber: receipt.blockNumber,
          confirmations: await confirmationsOf(receipt.blockNumber),
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

    async signTransfer({ to, amountUnits, nonce, reserved = { usdtUnits: 0n, gasWei: 0n } }) {
      const account = requireTreasury();
      await ensureReady();
      const data = encodeFunctionData({ abi: USDT_ABI, functionName: 'transfer', args: [to, amountUnits] });

      // Read after the caller's mined nonce (which decides what is reserved): a transfer mined in
      // between is then both reserved and already off the balance, counted twice, never zero times.
      const [balance, weiBalance] = await Promise.all([
        ledger.balanceOf(account.address),
        call('eth_getBalance', () => rpc.getBalance({ address: account.address })),
      ]);
      if (balance < reserved.usdtUnits + amountUnits) {
        const message =
          `treasury ${account.address} holds ${balance} USDT units, needs ${amountUnits}` +
          ` plus ${reserved.usdtUnits} for transfers signed and not yet mined`;
        throw new ChainError(message, { kind: 'insufficient_funds' });
      }
      const [gas, fees] = await Promise.all([
        call('eth_estimateGas', () => rpc.estimateGas({ account: account.address, to: usdt, data })),
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
        chainId: opts.chainId,
        to: usdt,
        data,
        nonce,
        gas: gasLimit,
        ...fees,
      });
      return { rawTransaction, txHash: keccak256(rawTransaction) };
    },

    async signReplacement(oldRaw) {
      const account = requireTreasury();
      await ensureReady();
      const old = parseTransaction(oldRaw);
      if (
        old.type !== 'eip1559' ||
        old.to === undefined ||
        old.to === null ||
        !sameAddress(old.to, usdt) ||
        old.chainId !== opts.chainId ||
        old.nonce === undefined ||
        // Signed by another key (one rotated out): a "replacement" from this key would be a second
        // transfer, from another account, that could land beside the first.
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
      const market = await marketFees();
      if (
        market.maxFeePerGas <= oldFees.maxFeePerGas &&
        market.maxPriorityFeePerGas <= oldFees.maxPriorityFeePerGas
      ) {
        return null;
      }
      const tip = max(bumped(oldFees.maxPriorityFeePerGas), market.maxPriorityFeePerGas);
      const newFees: FeeCaps = {
        maxPriorityFeePerGas: tip,
        maxFeePerGas: max(max(bumped(oldFees.maxFeePerGas), market.maxFeePerGas), tip),
      };
      // Same nonce, recipient, calldata and gas limit: only one of the two can ever be mined, and
      // whichever is moves the same USDT.
      const rawTransaction = await account.signTransaction({
        type: 'eip1559',
        chainId: opts.chainId,
        to: usdt,
        data: old.data,
        nonce: old.nonce,
        gas: old.gas,
        ...newFees,
      });
      return { rawTransaction, txHash: keccak256(rawTransaction), fees: { old: oldFees, new: newFees } };
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
        if (ALREADY_KNOWN.test(errorText(err))) return hash;
        throw error;
      }
    },
  };

  async function confirmationsOf(blockNumber: bigint): Promise<number> {
    // cacheTime 0: viem otherwise serves a block number up to 4 s old.
    const latest = await call('eth_blockNumber', () => rpc.getBlockNumber({ cacheTime: 0 }));
    // A load-balanced RPC may answer from a node a block behind the one that gave the receipt: clamp at 0.
    return Math.max(0, Number(latest - blockNumber + 1n));
  }

  /**
   * The fee caps a transaction is signed with today: twice the latest base fee plus the suggested tip,
   * headroom for the base fee to rise while it waits (unused headroom is not charged).
   */
  async function marketFees(): Promise<FeeCaps> {
    const [block, tip] = await Promise.all([
      call('eth_getBlockByNumber', () => rpc.getBlock({ blockTag: 'latest' })),
      call('eth_maxPriorityFeePerGas', () => rpc.estimateMaxPriorityFeePerGas()),
    ]);
    return { maxFeePerGas: (block.baseFeePerGas ?? 0n) * 2n + tip, maxPriorityFeePerGas: tip };
  }

  function requireTreasury(): PrivateKeyAccount {
    if (!treasury) throw new ChainError('no treasury private key configured', { kind: 'config' });
    return treasury;
  }

  return ledger;
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
  const logs = await call('eth_getLogs', () =>
    client(opts.rpcUrl).getLogs({
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
