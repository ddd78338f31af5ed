import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  createPublicClient,
  createWalletClient,
  http,
  keccak256,
  toHex,
  type Address,
  type Hash,
  type Hex,
  type PublicClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { compileContract, compileFresh, sourceKey } from '../../dev/local/compile-contracts';
import { USDT_ABI } from '../../src/adapters/chain/usdt-abi';
import { ChainError } from '../../src/adapters/chain/chain-error';
import type { UsdtLedger } from '../../src/adapters/chain/ledger-types';
import { createUsdtLedger } from '../../src/adapters/chain/usdt-ledger';
import { deployBatchSender } from './batch-sender';
import { ANVIL_DEV_ACCOUNTS, anvilAccount, startAnvil } from '../../dev/local/infra/anvil';
import { freePort } from '../../dev/local/infra/ports';
import { startTestChain, type TestChain } from '../support/chain';

// Runs against a real anvil node and a real TestUSDT deployment: no mocks.

const CHAIN_ID = 42161;
const USDT = (whole: number) => BigInt(whole) * 1_000_000n;
const deployer = anvilAccount('deployer');
const providerWallet = anvilAccount('provider-sandbox');
const treasury = anvilAccount('treasury');

const freshAddress = (): Address => privateKeyToAccount(generatePrivateKey()).address;

let anvil: TestChain;
let usdt: Address;
let rpc: PublicClient;
let ledger: UsdtLedger;

beforeAll(async () => {
  anvil = await startTestChain({
    chainId: CHAIN_ID,
    funded: [
      { wallet: providerWallet.address, usdtUnits: USDT(1_000) },
      { wallet: treasury.address, usdtUnits: USDT(1_000) },
    ],
  });
  usdt = anvil.usdtAddress;
  rpc = createPublicClient({ transport: http(anvil.rpcUrl) });
  ledger = createUsdtLedger({
    rpcUrl: anvil.rpcUrl,
    chainId: CHAIN_ID,
    usdtAddress: usdt,
    treasuryPrivateKey: treasury.privateKey,
  });
});

afterAll(async () => {
  await anvil?.stop();
});

/** A USDT transfer sent the ordinary way, as the provider would; `gas` set skips estimation so reverts get mined. */
const providerTransfer = (to: Address, units: bigint, gas?: bigint): Promise<Hash> =>
  anvil.transfer(providerWallet.privateKey, to, units, { gas });

describe('local chain setup', () => {
  it('dev accounts are the node’s own funded accounts, keys matching addresses', async () => {
    const nodeAccounts = (await anvil.rpc('eth_accounts')) as string[];
    ANVIL_DEV_ACCOUNTS.forEach((account, i) => {
      expect(privateKeyToAccount(account.privateKey).address).toBe(account.address);
      expect(nodeAccounts[i]?.toLowerCase()).toBe(account.address.toLowerCase());
    });
  });

  it('deploys a 6-decimal token and mints the requested balances', async () => {
    expect(await rpc.readContract({ address: usdt, abi: USDT_ABI, functionName: 'decimals' })).toBe(6);
    expect(await ledger.balanceOf(treasury.address)).toBeGreaterThanOrEqual(USDT(900));
  });

  it('serves the compiled contract from the cache on later calls, and recompiles a stale one', () => {
    // The committed artefact is current (test/build/contract-artifacts.test.ts), so it is what
    // compileContract deploys; a fresh compile goes through the cache, keyed by source and settings.
    const committed = compileContract('TestUSDT');
    const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'usdt-cache-'));
    try {
      const cacheFile = path.join(cacheDir, 'TestUSDT.json');
      const key = sourceKey('TestUSDT');
      // A marker no compiler would produce: getting it back proves the cache answered, not solc.
      writeFileSync(cacheFile, JSON.stringify({ key, abi: [], bytecode: '0xcafe' }));
      expect(compileFresh('TestUSDT', { cacheFile })).toEqual({ abi: [], bytecode: '0xcafe' });
      // Another key (source or settings changed): compiled again, and the cache rewritten.
      writeFileSync(cacheFile, JSON.stringify({ key: 'stale', abi: [], bytecode: '0xcafe' }));
      expect(compileFresh('TestUSDT', { cacheFile }).bytecode).toBe(committed.bytecode);
      expect((JSON.parse(readFileSync(cacheFile, 'utf8')) as { key: string }).key).toBe(key);
    } finally {
      rmSync(cacheDir, { recursive: true, force: true });
    }
  });

  it('refuses to start on a port something already listens on', async () => {
    const port = Number(new URL(anvil.rpcUrl).port);
    await expect(startAnvil({ port })).rejects.toThrow(/already in use/);
  });
});

describe('verifyTransfer', () => {
  const receiver = freshAddress();
  const amount = 12_345_678n; // 12.345678 USDT: exercises all six decimals
  let txHash: Hash;

  beforeAll(async () => {
    txHash = await providerTransfer(receiver, amount);
  });

  it('confirms a real transfer and counts confirmations as blocks since inclusion, inclusive', async () => {
    const first = await ledger.verifyTransfer({
      txHash,
      to: receiver,
      amountUnits: amount,
      minConfirmations: 1,
    });
    expect(first).toMatchObject({ status: 'confirmed' });
    if (first.status !== 'confirmed') return;

    await anvil.mine(2);
    const later = await ledger.verifyTransfer({
      txHash,
      to: receiver,
      amountUnits: amount,
      minConfirmations: 3,
    });
    // The log index names the matched Transfer within its block (with the hash, the transfer claim).
    const receipt = await rpc.getTransactionReceipt({ hash: txHash });
    const transferLog = receipt.logs.find((log) => log.address.toLowerCase() === usdt.toLowerCase());
    expect(later).toEqual({
      status: 'confirmed',
      blockNumber: first.blockNumber,
      confirmations: first.confirmations + 2,
      logIndexes: [transferLog?.logIndex],
    });
  });

  it('compares the receiver case-insensitively', async () => {
    const check = await ledger.verifyTransfer({
      txHash,
      to: receiver.toLowerCase() as Address,
      amountUnits: amount,
      minConfirmations: 1,
    });
    expect(check.status).toBe('confirmed');
  });

  it('is pending while confirmations are fewer than required', async () => {
    const check = await ledger.verifyTransfer({
      txHash,
      to: receiver,
      amountUnits: amount,
      minConfirmations: 1_000,
    });
    expect(check).toEqual({ status: 'pending', confirmations: expect.any(Number), mined: true });
    if (check.status === 'pending') expect(check.confirmations).toBeGreaterThanOrEqual(1);
  });

  it('lists every matching Transfer of a batched transaction, and only those', async () => {
    const pay = await deployBatchSender({ rpcUrl: anvil.rpcUrl, usdt, payerKey: providerWallet.privateKey });
    const batchReceiver = freshAddress();
    const hash = await pay([
      { to: batchReceiver, units: USDT(3) },
      { to: freshAddress(), units: USDT(3) },
      { to: batchReceiver, units: USDT(4) },
      { to: batchReceiver, units: USDT(3) },
    ]);
    const receipt = await rpc.getTransactionReceipt({ hash });
    const usdtLogs = receipt.logs.filter((log) => log.address.toLowerCase() === usdt.toLowerCase());
    expect(usdtLogs).toHaveLength(4);
    const check = await ledger.verifyTransfer({
      txHash: hash,
      to: batchReceiver,
      amountUnits: USDT(3),
      minConfirmations: 1,
    });
    expect(check).toMatchObject({
      status: 'confirmed',
      logIndexes: [usdtLogs[0]!.logIndex, usdtLogs[3]!.logIndex],
    });
  });

  it('reports a mismatch for a wrong amount or a wrong receiver', async () => {
    const wrongAmount = await ledger.verifyTransfer({
      txHash,
      to: receiver,
      amountUnits: amount + 1n,
      minConfirmations: 1,
    });
    expect(wrongAmount).toEqual({
      status: 'mismatch',
      reason: expect.stringContaining(`${amount} units to`),
    });

    const wrongReceiver = await ledger.verifyTransfer({
      txHash,
      to: freshAddress(),
      amountUnits: amount,
      minConfirmations: 1,
    });
    expect(wrongReceiver.status).toBe('mismatch');
  });

  it('reports a mismatch for a successful tx that moved no USDT', async () => {
    const wallet = createWalletClient({
      account: privateKeyToAccount(deployer.privateKey),
      transport: http(anvil.rpcUrl),
    });
    const hash = await wallet.sendTransaction({ to: receiver, value: 1n, chain: null });
    await rpc.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    const check = await ledger.verifyTransfer({
      txHash: hash,
      to: receiver,
      amountUnits: 1n,
      minConfirmations: 1,
    });
    expect(check).toEqual({
      status: 'mismatch',
      reason: expect.stringContaining('USDT transfers seen: none'),
    });
  });

  it('reports not_found for a hash the node does not know, mismatch for a malformed one', async () => {
    const unknown = keccak256(toHex(`no such tx ${Date.now()}`));
    expect(
      await ledger.verifyTransfer({
        txHash: unknown,
        to: receiver,
        amountUnits: amount,
        minConfirmations: 1,
      }),
    ).toEqual({
      status: 'not_found',
    });
    const malformed = await ledger.verifyTransfer({
      txHash: '0x1234',
      to: receiver,
      amountUnits: amount,
      minConfirmations: 1,
    });
    expect(malformed.status).toBe('mismatch');
  });

  it('reports a mined but reverted transfer (amount above the sender balance)', async () => {
    const hash = await providerTransfer(receiver, USDT(1_000_000), 100_000n);
    const check = await ledger.verifyTransfer({
      txHash: hash,
      to: receiver,
      amountUnits: USDT(1_000_000),
      minConfirmations: 1,
    });
    const receipt = await rpc.getTransactionReceipt({ hash });
    expect(check).toEqual({
      status: 'reverted',
      blockNumber: receipt.blockNumber,
      confirmations: 1,
      final: false,
    });
    // Final once its block is at or below the chain's finalized one (anvil: 64 blocks behind).
    await anvil.mine(64);
    const final = await ledger.verifyTransfer({
      txHash: hash,
      to: receiver,
      amountUnits: USDT(1_000_000),
      minConfirmations: 1,
    });
    expect(final).toEqual({
      status: 'reverted',
      blockNumber: receipt.blockNumber,
      confirmations: 65,
      final: true,
    });
  });
});

describe('treasury transfers', () => {
  afterEach(async () => {
    await anvil.setAutomine(true);
  });

  it('broadcasting the same signed tx again and again moves USDT exactly once', async () => {
    const receiver = freshAddress();
    const nonce = await ledger.nextNonce();
    const { rawTransaction, txHash } = await ledger.signTransfer({
      to: receiver,
      amountUnits: USDT(7),
      nonce,
    });

    // Hold mining so the resend hits the pool ("already known"), then again after mining ("nonce too low").
    await anvil.setAutomine(false);
    expect(await ledger.broadcast(rawTransaction)).toBe(txHash);
    expect(await ledger.broadcast(rawTransaction)).toBe(txHash);
    expect(
      await ledger.verifyTransfer({ txHash, to: receiver, amountUnits: USDT(7), minConfirmations: 1 }),
    ).toEqual({
      status: 'pending',
      confirmations: 0,
      mined: false,
    });
    expect(await ledger.nextNonce()).toBe(nonce + 1);

    await anvil.mine();
    expect(await ledger.broadcast(rawTransaction)).toBe(txHash);
    await anvil.setAutomine(true);
    expect(await ledger.broadcast(rawTransaction)).toBe(txHash);

    const transfers = await anvil.transfersTo(receiver);
    expect(transfers).toEqual({ count: 1, total: USDT(7), txHashes: [txHash] });
    expect(
      await ledger.verifyTransfer({ txHash, to: receiver, amountUnits: USDT(7), minConfirmations: 1 }),
    ).toMatchObject({
      status: 'confirmed',
    });
  });

  it('rejects, as not retryable, a different tx whose nonce is already taken', async () => {
    const nonce = await ledger.nextNonce();
    const first = await ledger.signTransfer({ to: freshAddress(), amountUnits: 1n, nonce });
    const rival = await ledger.signTransfer({ to: freshAddress(), amountUnits: 2n, nonce });
    await ledger.broadcast(first.rawTransaction);

    const error = await ledger.broadcast(rival.rawTransaction).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChainError);
    expect(error).toMatchObject({ kind: 'nonce_conflict', retryable: false });
  });

  it('refuses to sign a transfer the treasury cannot cover', async () => {
    const nonce = await ledger.nextNonce();
    const error = await ledger
      .signTransfer({ to: freshAddress(), amountUnits: USDT(10_000_000), nonce })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'insufficient_funds', retryable: false });
  });

  it('refuses to sign when the balance covers the transfer but not what unmined transfers reserve', async () => {
    const nonce = await ledger.nextNonce();
    const balance = await ledger.balanceOf(treasury.address);
    await expect(
      ledger.signTransfer({
        to: freshAddress(),
        amountUnits: 1n,
        nonce,
        reserved: { usdtUnits: balance, gasWei: 0n },
      }),
    ).rejects.toMatchObject({ kind: 'insufficient_funds', message: expect.stringMatching(/not yet mined/) });
    const wei = await rpc.getBalance({ address: treasury.address });
    await expect(
      ledger.signTransfer({
        to: freshAddress(),
        amountUnits: 1n,
        nonce,
        reserved: { usdtUnits: 0n, gasWei: wei },
      }),
    ).rejects.toMatchObject({ kind: 'insufficient_funds', message: expect.stringMatching(/wei/) });
    await expect(
      ledger.signTransfer({
        to: freshAddress(),
        amountUnits: 1n,
        nonce,
        reserved: { usdtUnits: balance - 1n, gasWei: 0n },
      }),
    ).resolves.toMatchObject({ txHash: expect.any(String) });
  });

  it('needs a treasury key to sign', async () => {
    const readOnly = createUsdtLedger({ rpcUrl: anvil.rpcUrl, chainId: CHAIN_ID, usdtAddress: usdt });
    expect(readOnly.treasuryAddress()).toBeUndefined();
    expect(ledger.treasuryAddress()).toBe(treasury.address);
    await expect(
      readOnly.signTransfer({ to: freshAddress(), amountUnits: 1n, nonce: 0 }),
    ).rejects.toMatchObject({
      kind: 'config',
      retryable: false,
    });
  });
});

describe('misconfiguration and outages', () => {
  it('raises on a chain id mismatch', async () => {
    const wrongChain = createUsdtLedger({ rpcUrl: anvil.rpcUrl, chainId: 1, usdtAddress: usdt });
    const error = await wrongChain.balanceOf(treasury.address).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChainError);
    expect(error).toMatchObject({
      kind: 'config',
      retryable: false,
      message: expect.stringMatching(/chain id mismatch.*42161.*1/),
    });
  });

  it('raises when no contract lives at the USDT address', async () => {
    const noToken = createUsdtLedger({
      rpcUrl: anvil.rpcUrl,
      chainId: CHAIN_ID,
      usdtAddress: freshAddress(),
    });
    await expect(noToken.balanceOf(treasury.address)).rejects.toThrow(/no contract at USDT address/);
  });

  it('classifies an unreachable node as retryable', async () => {
    const down = createUsdtLedger({
      rpcUrl: `http://127.0.0.1:${await freePort()}`,
      chainId: CHAIN_ID,
      usdtAddress: usdt,
    });
    const error = await down
      .verifyTransfer({
        txHash: keccak256('0x01'),
        to: treasury.address,
        amountUnits: 1n,
        minConfirmations: 1,
      })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'network', retryable: true });
  });

  it('rejects an undecodable raw transaction as not retryable', async () => {
    const error = await ledger.broadcast('0x1234' as Hex).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'invalid', retryable: false });
  });
});
