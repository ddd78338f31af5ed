import type { FastifyBaseLogger } from 'fastify';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  erc20Abi,
  http,
  WaitForTransactionReceiptTimeoutError,
  type Address,
  type Hex,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

import { formatUsdtUnits, usdtUnitsForBrl } from '../../src/domain/money';
import type { Charge, NotificationInput, Payment, Settlement } from './state';

export interface UsdtSender {
  readonly address: Address;
  /**
   * Sends `units` USDT base units to `to` and waits for the receipt. Throws TransferNotSentError when
   * nothing was broadcast; once broadcast it only waits (never re-sends) until the receipt or `signal`.
   */
  transfer(
    to: Address,
    units: bigint,
    signal: AbortSignal,
  ): Promise<{ txHash: Hex; status: 'success' | 'reverted' }>;
}

export class TransferNotSentError extends Error {
  override readonly name = 'TransferNotSentError';
}

export interface UsdtSenderOptions {
  rpcUrl: string;
  chainId: number;
  usdtAddress: Address;
  privateKey: Hex;
  /** How often receipts are polled. Default 500 ms (anvil mines instantly; L2 blocks are sub-second). */
  pollingIntervalMs?: number;
}

export function createUsdtSender(opts: UsdtSenderOptions): UsdtSender {
  const account = privateKeyToAccount(opts.privateKey);
  const chain = defineChain({
    id: opts.chainId,
    name: `chain ${opts.chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [opts.rpcUrl] } },
  });
  const transport = http(opts.rpcUrl);
  const pollingInterval = opts.pollingIntervalMs ?? 500;
  const wallet = createWalletClient({ account, chain, transport, pollingInterval });
  const reader = createPublicClient({ chain, transport, pollingInterval });
  // One wallet, one nonce sequence: sends go one at a time, each reading the pending nonce after the
  // previous one was broadcast, so two settlements can never race for the same nonce.
  const sendLock = createLock();

  async function waitForReceipt(hash: Hex, signal: AbortSignal) {
    for (;;) {
      signal.throwIfAborted();
      try {
        return await abortable(reader.waitForTransactionReceipt({ hash, timeout: 30_000 }), signal);
      } catch (err) {
        // Slow chain: keep waiting. The transfer is out; sending again could pay twice.
        if (!(err instanceof WaitForTransactionReceiptTimeoutError)) throw err;
      }
    }
  }

  return {
    address: account.address,
    async transfer(to, units, signal) {
      const txHash = await sendLock(async () => {
        try {
          return await wallet.writeContract({
            address: opts.usdtAddress,
            abi: erc20Abi,
            functionName: 'transfer',
            args: [to, units],
          });
        } catch (err) {
          const detail =
            err instanceof Error ? ((err as { shortMessage?: string }).shortMessage ?? err.message) : '';
          throw new TransferNotSentError(`USDT transfer not sent: ${detail}`);
        }
      });
      const receipt = await waitForReceipt(txHash, signal);
      return { txHash, status: receipt.status };
    },
  };
}

export interface SettlementRunnerOptions {
  /** Absent when SANDBOX_USDT_ADDRESS / SANDBOX_WALLET_PRIVATE_KEY are not configured. */
  sender?: UsdtSender;
  spotRate: string;
  spread: string;
  chainId: number;
  now: () => Date;
  notify: (input: NotificationInput) => void;
  logger: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
}

export interface SettlementRunner {
  readonly canSendUsdt: boolean;
  /** Runs the settlement in the background (the HTTP answer does not wait for the chain). */
  start(settlement: Settlement, charge: Charge): void;
  /** Stops waiting for receipts and waits for the running settlements to end. */
  close(): Promise<void>;
}

/**
 * Plays the provider's conversion desk: converts the charge's BRL at the sandbox rate and spread,
 * sends the USDT, and reports the outcome as a notification (as the real provider would, since the
 * HTTP request that asked for the settlement was answered long before).
 */
export function createSettlementRunner(opts: SettlementRunnerOptions): SettlementRunner {
  const stop = new AbortController();
  const running = new Set<Promise<void>>();

  function fail(settlement: Settlement, charge: Charge, reason: string): void {
    settlement.status = 'failed';
    opts.notify({ ...eventBase(settlement, charge), type: 'settlement.failed', failure_reason: reason });
  }

  function eventBase(settlement: Settlement, charge: Charge) {
    return {
      charge_id: charge.chargeId,
      external_id: settlement.externalId,
      occurred_at: opts.now().toISOString(),
    };
  }

  async function run(settlement: Settlement, charge: Charge): Promise<void> {
    const log = { settlement_id: settlement.settlementId, charge_id: charge.chargeId };
    if (settleablePayment(charge)?.outcome === 'settlement_failed') {
      opts.logger.info(log, 'settlement failed on purpose (payment outcome settlement_failed)');
      return fail(settlement, charge, 'simulated settlement failure');
    }
    const units = usdtUnitsForBrl(charge.amountCentavos, opts.spotRate, opts.spread);
    if (units <= 0n) return fail(settlement, charge, 'amount too small to convert');
    if (!opts.sender) return fail(settlement, charge, 'sandbox has no USDT wallet configured');

    let result: Awaited<ReturnType<UsdtSender['transfer']>>;
    try {
      result = await opts.sender.transfer(settlement.receiverWallet, units, stop.signal);
    } catch (err) {
      if (err instanceof TransferNotSentError) {
        opts.logger.error({ ...log, err }, 'settlement failed: USDT not sent');
        return fail(settlement, charge, err.message);
      }
      // Broadcast, but we stopped (or the node failed) before the receipt: the outcome is unknown,
      // so report nothing rather than something false. The service's settlement timeout covers it.
      opts.logger.error({ ...log, err }, 'settlement outcome unknown: receipt not obtained');
      return;
    }
    settlement.txHash = result.txHash;
    if (result.status === 'reverted') {
      opts.logger.error({ ...log, tx_hash: result.txHash }, 'settlement failed: USDT transfer reverted');
      return fail(settlement, charge, `USDT transfer reverted (${result.txHash})`);
    }
    settlement.status = 'completed';
    opts.logger.info(
      { ...log, tx_hash: result.txHash, amount_usdt: formatUsdtUnits(units) },
      'settlement completed',
    );
    opts.notify({
      ...eventBase(settlement, charge),
      type: 'settlement.completed',
      tx_hash: result.txHash,
      amount_usdt: formatUsdtUnits(units),
      chain_id: opts.chainId,
      confirmed_at: opts.now().toISOString(),
    });
  }

  return {
    canSendUsdt: opts.sender !== undefined,
    start(settlement, charge) {
      const job = run(settlement, charge).catch((err: unknown) => {
        opts.logger.error({ err, settlement_id: settlement.settlementId }, 'settlement crashed');
      });
      running.add(job);
      void job.finally(() => running.delete(job));
    },
    async close() {
      stop.abort();
      await Promise.all(running);
    },
  };
}

/**
 * The payment a settlement converts: the first of exactly the charge's amount. Other payments
 * (another amount, a repeat) are the service's to refund; the provider settles a charge once.
 */
export function settleablePayment(charge: Charge): Payment | undefined {
  return charge.payments.find((p) => p.amountCentavos === charge.amountCentavos);
}

/** A promise-chain mutex: each task starts when the previous one has settled. */
function createLock() {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(task: () => Promise<T>): Promise<T> => {
    const result = tail.then(task, task);
    tail = result.catch(() => undefined);
    return result;
  };
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
