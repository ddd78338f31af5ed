import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  erc20Abi,
  http as viemHttp,
  type Address,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress } from 'viem/accounts';
import { compileContract } from '../local/compile-contracts';
import { anvilAccount } from '../local/infra/anvil';
import { buildSandboxApp } from '../sandbox/app';
import { loadSandboxConfig } from '../sandbox/config';
import { closedLoop, type Summary } from './stats';
import { ROOT } from './stack';

/**
 * The provider floor: what a payout service with zero overhead of its own would see between a PIX
 * payment and its `settlement.completed` webhook. The bench runs its own provider sandbox in-process
 * (same code, same chain as the stack's) and its own webhook listener; on `pix.received` it reads the
 * event and requests the settlement at once, and the clock stops when `settlement.completed` arrives.
 * That is the provider's notification latency (webhook out, event read) plus one confirmation (the
 * sandbox notifies only after its transfer's receipt, which it polls every 500 ms): no service can
 * finish a payout sooner, since it learns of both the payment and the transfer from those webhooks.
 */

const CHAIN_ID = 42161;
const ITERATION_TIMEOUT_MS = 60_000;
const USDT = 1_000_000n; // base units per USDT
/** Topped up when the wallet holds less than this (a charge of 100 BRL settles about 18 USDT). */
const MIN_BALANCE = 100_000n * USDT;
const TOP_UP = 1_000_000n * USDT;

export interface ProviderFloor {
  measure(opts: {
    concurrency: number;
    durationMs: number;
    maxOperations: number;
  }): Promise<Summary & { firstError?: string }>;
  close(): Promise<void>;
}

interface Waiter {
  chargeId: string;
  receiver: Address;
  settled: (arrivedAt: number) => void;
  failed: (err: Error) => void;
}

interface ProviderEvent {
  type?: string;
  external_id?: string;
  charge_id?: string;
  failure_reason?: string;
}

export async function startProviderFloor(opts: { rpcUrl: string }): Promise<ProviderFloor> {
  const chain = JSON.parse(readFileSync(path.join(ROOT, '.data', 'local-chain.json'), 'utf8')) as {
    usdtAddress: Address;
  };
  const wallet = anvilAccount('spare');
  await fundWallet(opts.rpcUrl, chain.usdtAddress, wallet.address);

  // Waiting iterations by their external id, which every provider event carries.
  const waiting = new Map<string, Waiter>();
  let sandboxUrl = '';
  const listener = http.createServer((req, res) => {
    const arrivedAt = performance.now();
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      void onWebhook(body, arrivedAt);
    });
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const listenerPort = (listener.address() as AddressInfo).port;

  async function onWebhook(body: string, arrivedAt: number): Promise<void> {
    let waiter: Waiter | undefined;
    try {
      const { token } = JSON.parse(body) as { token: string };
      // As the service does: the webhook carries only a token, the event is read from the provider.
      const res = await fetch(`${sandboxUrl}/pix/notification/${encodeURIComponent(token)}`);
      const event = (await res.json()) as ProviderEvent;
      waiter = event.external_id ? waiting.get(event.external_id) : undefined;
      if (!waiter) return;
      if (event.type === 'pix.received') {
        await call(sandboxUrl, '/settlements', {
          external_id: event.external_id,
          charge_id: waiter.chargeId,
          receiver_wallet: waiter.receiver,
          chain_id: CHAIN_ID,
        });
      } else if (event.type === 'settlement.completed') {
        waiter.settled(arrivedAt);
      } else if (event.type === 'settlement.failed') {
        waiter.failed(new Error(`settlement failed: ${event.failure_reason}`));
      }
    } catch (err) {
      waiter?.failed(err instanceof Error ? err : new Error(String(err)));
    }
  }

  const config = loadSandboxConfig({
    SANDBOX_PORT: '0',
    SANDBOX_HOST: '127.0.0.1',
    SANDBOX_WEBHOOK_URL: `http://127.0.0.1:${listenerPort}/webhooks/provider-floor`,
    SANDBOX_EVM_RPC_URL: opts.rpcUrl,
    SANDBOX_CHAIN_ID: String(CHAIN_ID),
    SANDBOX_USDT_ADDRESS: chain.usdtAddress,
    SANDBOX_WALLET_PRIVATE_KEY: wallet.privateKey,
    SANDBOX_LOG_LEVEL: 'warn',
  });
  const sandbox = buildSandboxApp(config);
  await sandbox.listen({ port: config.port, host: config.host });
  sandboxUrl = `http://127.0.0.1:${(sandbox.server.address() as AddressInfo).port}`;

  async function once(): Promise<number> {
    const externalId = `bench-provider-floor-${randomUUID()}`;
    const charge = await call(sandboxUrl, '/pix/charges', {
      external_id: externalId,
      amount_brl: '100.00',
      payer_pix_key: 'payer@example.com',
      payer_pix_key_type: 'EMAIL',
      expires_in_seconds: 600,
    });
    let timer: NodeJS.Timeout | undefined;
    const settledAt = new Promise<number>((resolve, reject) => {
      waiting.set(externalId, {
        chargeId: charge.charge_id!,
        receiver: privateKeyToAddress(generatePrivateKey()),
        settled: resolve,
        failed: reject,
      });
      timer = setTimeout(
        () => reject(new Error('no settlement.completed webhook in time')),
        ITERATION_TIMEOUT_MS,
      );
    });
    try {
      const began = performance.now();
      await call(sandboxUrl, '/sandbox/payments', { pix_copy_paste: charge.pix_copy_paste });
      return (await settledAt) - began;
    } finally {
      clearTimeout(timer);
      waiting.delete(externalId);
    }
  }

  return {
    measure: ({ concurrency, durationMs, maxOperations }) =>
      closedLoop({ concurrency, durationMs, maxOperations }, once),
    close: async () => {
      // The sandbox first: it stops its settlements and webhook loops, then nothing calls the listener.
      await sandbox.close();
      await new Promise<void>((resolve) => {
        listener.close(() => resolve());
        listener.closeAllConnections();
      });
    },
  };
}

async function call(baseUrl: string, route: string, body: unknown): Promise<Record<string, string>> {
  const res = await fetch(`${baseUrl}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, string>;
  if (res.status >= 300) throw new Error(`provider floor: ${route} answered ${res.status}: ${json.error}`);
  return json;
}

/** Mints USDT to the floor's sandbox wallet with the token's owner (the deployer) when it runs low. */
async function fundWallet(rpcUrl: string, usdtAddress: Address, to: Address): Promise<void> {
  const transport = viemHttp(rpcUrl);
  const reader = createPublicClient({ transport });
  const balance = await reader.readContract({
    address: usdtAddress,
    abi: erc20Abi,
    functionName: 'balanceOf',
    args: [to],
  });
  if (balance >= MIN_BALANCE) return;
  const chain = defineChain({
    id: await reader.getChainId(),
    name: 'local',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const owner = createWalletClient({
    account: privateKeyToAccount(anvilAccount('deployer').privateKey),
    chain,
    transport,
  });
  const hash = await owner.writeContract({
    address: usdtAddress,
    abi: compileContract('TestUSDT').abi,
    functionName: 'mint',
    args: [to, TOP_UP],
  });
  const receipt = await reader.waitForTransactionReceipt({ hash, pollingInterval: 100 });
  if (receipt.status !== 'success') throw new Error(`provider floor: USDT mint reverted (tx ${hash})`);
}
