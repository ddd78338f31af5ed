import { redactUrls } from '../../domain/url-redaction';
import {
  createPublicClient,
  http,
  TransactionNotFoundError,
  type Address,
  type GetTransactionReturnType,
  type Hex,
  type PublicClient,
} from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { callNode, ChainError } from './chain-error';

export interface UsdtLedgerOptions {
  rpcUrl: string;
  chainId: number;
  usdtAddress: Address;
  treasuryPrivateKey?: Hex;
}

/** What the ledger's reads and sends share: the node, the token, the treasury key and the start check. */
export interface LedgerNode {
  rpc: PublicClient;
  chainId: number;
  usdt: Address;
  treasury: PrivateKeyAccount | undefined;
  requireTreasury(): PrivateKeyAccount;
  /** Resolves once the node serves the configured chain and the token contract is there. */
  ensureReady(): Promise<void>;
  /** The transaction as the node knows it (mined or pooled), undefined when it knows none. */
  findTransaction(hash: Hex): Promise<GetTransactionReturnType | undefined>;
}

export function rpcClient(rpcUrl: string): PublicClient {
  // Modest transport retries: Temporal retries the activity anyway, and an activity must not hang for minutes.
  return createPublicClient({ transport: http(rpcUrl, { timeout: 10_000, retryCount: 2 }) });
}

export const sameAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

export function connectLedgerNode(opts: UsdtLedgerOptions): LedgerNode {
  const rpc = rpcClient(opts.rpcUrl);
  const usdt = opts.usdtAddress;
  const treasury: PrivateKeyAccount | undefined = opts.treasuryPrivateKey
    ? privateKeyToAccount(opts.treasuryPrivateKey)
    : undefined;

  // Checked once on first use (creation stays synchronous). A wrong chain would mean signing for, or
  // trusting receipts from, the wrong network; a missing contract means the USDT address is misconfigured.
  let ready: Promise<void> | undefined;
  const ensureReady = () => {
    ready ??= (async () => {
      const nodeChainId = await callNode('eth_chainId', () => rpc.getChainId());
      if (nodeChainId !== opts.chainId) {
        throw new ChainError(
          `chain id mismatch: ${redactUrls(opts.rpcUrl)} serves chain ${nodeChainId}, configured chain is ${opts.chainId}`,
          { kind: 'config' },
        );
      }
      const code = await callNode('eth_getCode', () => rpc.getCode({ address: usdt }));
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
    callNode('eth_getTransactionByHash', () =>
      rpc.getTransaction({ hash }).catch((err: unknown) => {
        if (err instanceof TransactionNotFoundError) return undefined;
        throw err;
      }),
    );

  function requireTreasury(): PrivateKeyAccount {
    if (!treasury) throw new ChainError('no treasury private key configured', { kind: 'config' });
    return treasury;
  }

  return { rpc, chainId: opts.chainId, usdt, treasury, requireTreasury, ensureReady, findTransaction };
}
