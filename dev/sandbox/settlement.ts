import type { FastifyBaseLogger } from 'fastify';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  encodeFunctionData,
  erc20Abi,
  http,
  keccak256,
  WaitForTransactionReceiptTimeoutError,
  type Address,
  type Hex,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

import { formatUsdtUnits, usdtUnitsForBrl } from '../../src/domain/money';
import type { Charge, NotificationInput, Payment, Settlement } from './state';

/** A signed transaction: its hash is known before it is sent. */
export interface SignedTransfer {
  txHash: Hex;
  rawTx: Hex;
}

export interface UsdtSender {
  readonly address: Address;
  /**
   * Signs a transfer of `units` USDT base units to `to`, hands it to `beforeBroadcast` (which saves
   * it), then sends it. Throws TransferNotSentError when nothing was sent (it could not be prepared,
   * or `beforeBroadcast` failed). Once sent, an error sending is not a proof that the node did not
   * take it: the transfer is returned all the same, and waitForReceipt sends it again.
   */
  send(to: Address, units: bigint, beforeBroadcast: (tx: SignedTransfer) => void): Promise<SignedTransfer>;
  /**
   * Sends the signed transfer again (harmless: same hash, same nonce, so it can be mined once at most)
   * and waits for its receipt until `signal` aborts. A restarted sandbox calls it for what it had
   * sent before it stopped; the resend goes through the send queue so no new transfer takes its nonce.
   */
  waitForReceipt(tx: SignedTransfer, signal: AbortSignal): Promise<'success' | 'reverted'>;
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
  // previous one was sent, so two settlements can never race for the same nonce.
  const sendLock = createLock();

  /** Best effort: the node may already have it ("already known") or have mined it ("nonce too low"). */
  async function resend(rawTx: Hex): Promise<void> {
    await sendLock(() => wallet.sendRawTransaction({ serializedTransaction: rawTx })).catch(() => undefined);
  }

  return {
    address: account.address,
    async send(to, units, beforeBroadcast) {
      return sendLock(async () => {
        let signed: SignedTransfer;
        try {
          // Estimating the gas runs the transfer: one that would revert is refused here, unsent.
          const request = await wallet.prepareTransactionRequest({
            to: opts.usdtAddress,
            data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, units] }),
          });
          const rawTx = await wallet.signTransaction(request);
          signed = { txHash: keccak256(rawTx), rawTx };
          // Saved before it is sent: a sandbox that dies right after sending still knows the hash.
          beforeBroadcast(signed);
        } catch (err) {
          const detail =
            err instanceof Error ? ((err as { shortMessage?: string }).shortMessage ?? err.message) : '';
          throw new TransferNotSentError(`USDT transfer not sent: ${detail}`);
        }
        // Sent (or perhaps sent) from here on: an error is no proof the node did not take it.
        await wallet.sendRawTransaction({ serializedTransaction: signed.rawTx }).catch(() => undefined);
        return signed;
      });
    },
    async waitForReceipt(tx, signal) {
      for (;;) {
        signal.throwIfAborted();
        await resend(tx.rawTx);
        try {
          const receipt = await abortable(
            reader.waitForTransactionReceipt({ hash: tx.txHash, timeout: 30_000 }),
            signal,
          );
          return receipt.status;
        } catch (err) {
          // Slow chain: keep waiting (and send the same transaction again). A new transaction could
          // pay twice.
          if (!(err instanceof WaitForTransactionReceiptTimeoutError)) throw err;
        }
      }
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
  /** Saves the state (SANDBOX_STATE_FILE) after a settlement changed. */
  persist: () => void;
  logger: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
}

export interface SettlementRunner {
  readonly canSendUsdt: boolean;
  /**
   * Runs the settlement in the background (the HTTP answer does not wait for the chain). Also resumes
   * one found unfinished at start: a `pending` one never sent anything, so it starts over; a
   * `broadcast` one only waits for the receipt of what it sent.
   */
  start(settlement: Settlement, charge: Charge | undefined): void;
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

  function update(settlement: Settlement, change: Partial<Settlement>): void {
    Object.assign(settlement, change, { updatedAt: opts.now() });
    opts.persist();
  }

  /** Nothing was sent: the failure is final and says so by having no tx hash. */
  function refuse(settlement: Settlement, reason: string): void {
    delete settlement.txHash;
    delete settlement.rawTx;
    delete settlement.amountUsdt;
    finishFailed(settlement, reason);
  }

  function finishFailed(settlement: Settlement, reason: string): void {
    update(settlement, { status: 'failed', failureReason: reason });
    opts.notify({ ...eventBase(settlement), type: 'settlement.failed', failure_reason: reason });
  }

  function eventBase(settlement: Settlement) {
    return {
      charge_id: settlement.chargeId,
      external_id: settlement.externalId,
      occurred_at: opts.now().toISOString(),
    };
  }

  async function run(settlement: Settlement, charge: Charge | undefined): Promise<void> {
    const log = { settlement_id: settlement.settlementId, charge_id: settlement.chargeId };
    let tx: SignedTransfer;
    if (settlement.status === 'broadcast' && settlement.txHash && settlement.rawTx) {
      opts.logger.info({ ...log, tx_hash: settlement.txHash }, 'settlement resumed: waiting for its receipt');
      tx = { txHash: settlement.txHash, rawTx: settlement.rawTx };
    } else {
      if (!charge) return refuse(settlement, 'charge unknown');
      if (settleablePayment(charge)?.outcome === 'settlement_failed') {
        opts.logger.info(log, 'settlement failed on purpose (payment outcome settlement_failed)');
        return refuse(settlement, 'simulated settlement failure');
      }
      const units = usdtUnitsForBrl(charge.amountCentavos, opts.spotRate, opts.spread);
      if (units <= 0n) return refuse(settlement, 'amount too small to convert');
      if (!opts.sender) return refuse(settlement, 'sandbox has no USDT wallet configured');
      try {
        tx = await opts.sender.send(settlement.receiverWallet, units, (signed) =>
          update(settlement, { status: 'broadcast', ...signed, amountUsdt: formatUsdtUnits(units) }),
        );
      } catch (err) {
        if (err instanceof TransferNotSentError) {
          opts.logger.error({ ...log, err }, 'settlement failed: USDT not sent');
          return refuse(settlement, err.message);
        }
        throw err;
      }
      opts.logger.info({ ...log, tx_hash: tx.txHash }, 'settlement broadcast');
    }
    if (!opts.sender) {
      // Restarted without a wallet: what was sent cannot be followed, and is not reported as failed.
      opts.logger.error({ ...log, tx_hash: tx.txHash }, 'settlement outcome unknown: no chain configured');
      return;
    }

    let status: 'success' | 'reverted';
    try {
      status = await opts.sender.waitForReceipt(tx, stop.signal);
    } catch (err) {
      // Sent, but we stopped (or the node failed) before the receipt: the outcome is unknown, so the
      // settlement stays `broadcast` rather than being reported as anything. With SANDBOX_STATE_FILE
      // a restart resumes the wait; without, the restarted sandbox does not know it (404).
      opts.logger.error(
        { ...log, err, tx_hash: tx.txHash },
        'settlement outcome unknown: receipt not obtained',
      );
      return;
    }
    if (status === 'reverted') {
      opts.logger.error({ ...log, tx_hash: tx.txHash }, 'settlement failed: USDT transfer reverted');
      return finishFailed(settlement, `USDT transfer reverted (${tx.txHash})`);
    }
    update(settlement, { status: 'completed' });
    const amountUsdt = settlement.amountUsdt!;
    opts.logger.info({ ...log, tx_hash: tx.txHash, amount_usdt: amountUsdt }, 'settlement completed');
    opts.notify({
      ...eventBase(settlement),
      type: 'settlement.completed',
      tx_hash: tx.txHash,
      amount_usdt: amountUsdt,
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
