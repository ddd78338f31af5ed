import {
  createPublicClient,
  encodeFunctionData,
  http,
  isHash,
  keccak256,
  parseEventLogs,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { TRANSFER_EVENT, USDT_ABI } from './usdt-abi';

export type TransferCheck =
  /** logIndex: the matched USDT Transfer's position in the block, which with the hash names the transfer. */
  | { status: 'confirmed'; blockNumber: bigint; confirmations: number; logIndex: number }
  /** Mined with fewer confirmations than required, or still waiting in the node's pool (0). */
  | { status: 'pending'; confirmations: number }
  /** No such transaction known to the node. */
  | { status: 'not_found' }
  | { status: 'reverted'; blockNumber: bigint }
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
  /** Signs USDT.transfer with the treasury key. The caller persists the raw tx and only ever rebroadcasts it. */
  signTransfer(args: {
    to: Address;
    amountUnits: bigint;
    nonce: number;
  }): Promise<{ rawTransaction: Hex; txHash: Hex }>;
  /** Idempotent: a tx the node already has (pooled or mined) counts as sent. Returns the tx hash. */
  broadcast(rawTransaction: Hex): Promise<Hex>;
  /** The treasury's next nonce, counting transactions still in the pool. */
  nextNonce(): Promise<number>;
  /** The treasury's nonce as of the finalized block: transactions below it can never be replaced. */
  finalizedNonce(): Promise<number>;
  /** Whether the node has a receipt for this transaction (it was mined). */
  hasReceipt(txHash: Hex): Promise<boolean>;
  treasuryAddress(): Address | undefined;
  balanceOf(owner: Address): Promise<bigint>;
}

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
          `chain id mismatch: ${opts.rpcUrl} serves chain ${nodeChainId}, configured chain is ${opts.chainId}`,
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

    async nextNonce() {
      const account = requireTreasury();
      await ensureReady();
      return call('eth_getTransactionCount', () =>
        rpc.getTransactionCount({ address: account.address, blockTag: 'pending' }),
      );
    },

    async finalizedNonce() {
      const account = requireTreasury();
      await ensureReady();
      return call('eth_getTransactionCount', () =>
        rpc.getTransactionCount({ address: account.address, blockTag: 'finalized' }),
      );
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
          ? { status: 'pending', confirmations: 0 }
          : { status: 'not_found' };
      }
      if (receipt.status !== 'success') return { status: 'reverted', blockNumber: receipt.blockNumber };

      // Any contract can emit an event named Transfer: only logs from the token contract itself count.
      const transfers = parseEventLogs({ abi: USDT_ABI, eventName: 'Transfer', logs: receipt.logs }).filter(
        (log) => sameAddress(log.address, usdt),
      );
      const matched = transfers.find((t) => sameAddress(t.args.to, to) && t.args.value === amountUnits);
      if (!matched) {
        const seen = transfers.map((t) => `${t.args.value} units to ${t.args.to}`).join(', ') || 'none';
        return {
          status: 'mismatch',
          reason: `no USDT Transfer of ${amountUnits} units to ${to} in ${txHash} (USDT transfers seen: ${seen})`,
        };
      }

      // cacheTime 0: viem otherwise serves a block number up to 4 s old.
      const latest = await call('eth_blockNumber', () => rpc.getBlockNumber({ cacheTime: 0 }));
      // A load-balanced RPC may answer from a node a block behind the one that gave the receipt: clamp at 0.
      const confirmations = Math.max(0, Number(latest - receipt.blockNumber + 1n));
      return confirmations >= minConfirmations && confirmations > 0
        ? { status: 'confirmed', blockNumber: receipt.blockNumber, confirmations, logIndex: matched.logIndex }
        : { status: 'pending', confirmations };
    },

    async signTransfer({ to, amountUnits, nonce }) {
      const account = requireTreasury();
      await ensureReady();
      const data = encodeFunctionData({ abi: USDT_ABI, functionName: 'transfer', args: [to, amountUnits] });

      const balance = await ledger.balanceOf(account.address);
      if (balance < amountUnits) {
        const message = `treasury ${account.address} holds ${balance} USDT units, needs ${amountUnits}`;
        throw new ChainError(message, { kind: 'insufficient_funds' });
      }
      const [gas, block, tip] = await Promise.all([
        call('eth_estimateGas', () => rpc.estimateGas({ account: account.address, to: usdt, data })),
        call('eth_getBlockByNumber', () => rpc.getBlock({ blockTag: 'latest' })),
        call('eth_maxPriorityFeePerGas', () => rpc.estimateMaxPriorityFeePerGas()),
      ]);
      const baseFee = block.baseFeePerGas ?? 0n;

      const rawTransaction = await account.signTransaction({
        type: 'eip1559',
        chainId: opts.chainId,
        to: usdt,
        data,
        nonce,
        // This exact tx is persisted and rebroadcast, never re-priced, so it gets generous caps: 50% over the
        // gas estimate (Arbitrum's estimate moves with L1 prices) and twice the base fee. Unused gas and fee
        // headroom are not charged.
        gas: (gas * 3n) / 2n,
        maxFeePerGas: baseFee * 2n + tip,
        maxPriorityFeePerGas: tip,
      });
      return { rawTransaction, txHash: keccak256(rawTransaction) };
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
