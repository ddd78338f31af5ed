/**
 * What a node or RPC failure means to the caller: every error of the ledger is a ChainError whose kind
 * says whether a retry can help, read from the texts that the node clients give.
 */

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

/** The node refused a resend because it already has the transaction (pooled or mined). */
export function isAlreadyKnown(err: unknown): boolean {
  return ALREADY_KNOWN.test(errorText(err));
}

/** One request to the node; whatever it throws comes out a ChainError named after `action`. */
export async function callNode<T>(action: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toChainError(err, action);
  }
}
