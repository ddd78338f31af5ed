import { sentHash } from '../support/chain';
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import {
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  http,
  keccak256,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress } from 'viem/accounts';
import { createActivities } from '../../src/activities';
import { createTreasuryHealthProbe } from '../../src/adapters/chain/treasury-health';
import { USDT_ABI } from '../../src/adapters/chain/usdt-abi';
import { createUsdtLedger } from '../../src/adapters/chain/usdt-ledger';
import { countTransfersTo } from '../../src/adapters/chain/usdt-reads';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { getOrCreateTreasuryTransfer } from '../../src/adapters/db/treasury-transfers-repo';
import { createHttpProvider } from '../../src/adapters/provider/http-provider';
import { createChainAndDenylistScreening } from '../../src/adapters/screening/receiver-screening';
import { createLogger } from '../../src/observability/logger';
import { createMetrics, type Metrics } from '../../src/observability/metrics';
import { deployTestUsdt } from '../../dev/local/deploy-test-usdt';
import { anvilAccount, startAnvil, type AnvilHandle } from '../../dev/local/infra/anvil';
import { freePort } from '../../dev/local/infra/ports';
import { testDatabaseUrl } from '../support/env';

// Treasury health on a real chain (anvil, chain id 42161, the test USDT with its issuer blocklist)
// and the real PostgreSQL: a treasury that cannot send keeps its payouts waiting (never a final
// refusal), a transfer it reverted is sent again in a new round once it can, a revert it did not
// cause stays final, and a transfer queued behind a nonce gap is reported with the gap's nonces.
const CHAIN_ID = 42161;
const deployer = anvilAccount('deployer');
const providerWallet = anvilAccount('provider-sandbox');

/** The test token's issuer blocklist, kept by its owner (the deployer). */
const BLOCKLIST_ABI = [
  {
    type: 'function',
    name: 'addToBlockedList',
    stateMutability: 'nonpayable',
    inputs: [{ name: 'account', type: 'address' }],
    outputs: [],
  },
  {
    type: 'function',
    name: 'removeFromBlockedList',
    stateMutability: 'nonpayable',
    inputs: [{ name: 'account', type: 'address' }],
    outputs: [],
  },
] as const;

const APPROVE_ABI = [
  {
    type: 'function',
    name: 'approve',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'spender', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    outputs: [{ name: '', type: 'bool' }],
  },
  {
    type: 'function',
    name: 'transferFrom',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'from', type: 'address' },
      { name: 'to', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    outputs: [{ name: '', type: 'bool' }],
  },
] as const;

let anvil: AnvilHandle;
let usdt: Address;
let rpc: PublicClient;
let db: Db;

beforeAll(async () => {
  anvil = await startAnvil({ port: await freePort(), chainId: CHAIN_ID });
  usdt = await deployTestUsdt({
    rpcUrl: anvil.rpcUrl,
    deployerKey: deployer.privateKey,
    mints: [{ to: providerWallet.address, units: 1_000_000_000n }],
  });
  rpc = createPublicClient({ transport: http(anvil.rpcUrl) });
  db = createPool(testDatabaseUrl(), 3);
}, 60_000);
afterAll(async () => {
  await db?.end();
  await anvil?.stop();
});
afterEach(async () => {
  await anvilRpc('evm_setAutomine', [true]);
});

const anvilRpc = (method: string, params: unknown[] = []) =>
  rpc.request({ method, params } as never) as Promise<unknown>;

/** Mines past anvil's finality (64 blocks back): what came before is final. */
const finalize = () => anvilRpc('anvil_mine', ['0x41']);

const wallet = (key: Hex) =>
  createWalletClient({ account: privateKeyToAccount(key), transport: http(anvil.rpcUrl) });

async function mined(hash: Hex) {
  return rpc.waitForTransactionReceipt({ hash, pollingInterval: 50 });
}

async function fund(to: Address, units: bigint): Promise<void> {
  const hash = await wallet(providerWallet.privateKey).writeContract({
    address: usdt,
    abi: USDT_ABI,
    functionName: 'transfer',
    args: [to, units],
    chain: null,
  });
  await mined(hash);
}

/**
 * The issuer blocks or unblocks `account`. Sent with a high tip: in a block it runs before the
 * treasury's transfers waiting in the same pool.
 */
async function setBlocked(account: Address, blocked: boolean): Promise<Hex> {
  return wallet(deployer.privateKey).writeContract({
    address: usdt,
    abi: BLOCKLIST_ABI,
    functionName: blocked ? 'addToBlockedList' : 'removeFromBlockedList',
    args: [account],
    chain: null,
    maxPriorityFeePerGas: 100_000_000_000n,
    maxFeePerGas: 1_000_000_000_000n,
  });
}

/** A treasury of its own (ETH for gas, optionally USDT), the activities bound to it, and their log. */
async function treasuryWorld(usdtUnits: bigint, opts: { repriceAfterSeconds?: number } = {}) {
  const key = generatePrivateKey();
  const address = privateKeyToAddress(key);
  await anvilRpc('anvil_setBalance', [address, '0x56BC75E2D63100000']);
  if (usdtUnits > 0n) await fund(address, usdtUnits);
  const ledger = createUsdtLedger({
    rpcUrl: anvil.rpcUrl,
    chainId: CHAIN_ID,
    usdtAddress: usdt,
    treasuryPrivateKey: key,
  });
  const metrics = createMetrics();
  const logs: Record<string, unknown>[] = [];
  const activities = createActivities({
    db,
    ledger,
    // Never called here: these activities talk to the chain and PostgreSQL only.
    provider: createHttpProvider({ baseUrl: 'http://127.0.0.1:9' }),
    logger: createLogger({
      level: 'info',
      name: 'test',
      destination: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
    }),
    metrics,
    nonceConflictProof: { receiptLookups: 3, spacingMs: 20 },
    treasuryRepriceAfterSeconds: opts.repriceAfterSeconds ?? 120,
    screening: createChainAndDenylistScreening({
      rpcUrl: anvil.rpcUrl,
      db,
      sources: ['denylist'],
      tokenAddress: usdt,
      oracleAddress: usdt,
      cacheSeconds: 0,
    }),
  });
  const request = (amountUnits: string) => ({
    payoutId: randomUUID(),
    to: privateKeyToAddress(generatePrivateKey()),
    amountUnits,
    minConfirmations: 1,
  });
  return { key, address, ledger, metrics, logs, activities, request };
}

const counter = async (metrics: Metrics, name: keyof Metrics, labels: Record<string, string> = {}) =>
  (
    await (
      metrics[name] as { get(): Promise<{ values: { value: number; labels: Record<string, string> }[] }> }
    ).get()
  ).values
    .filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
    .reduce((sum, v) => sum + v.value, 0);

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

async function rounds(payoutId: string) {
  const { rows } = await db.query<{ round: number; nonce: string; reverted: boolean; mined: string }>(
    `SELECT round, nonce::text, reverted_at IS NOT NULL AS reverted, mined_tx_hash AS mined
       FROM treasury_transfers WHERE payout_id = $1 ORDER BY round`,
    [payoutId],
  );
  return rows;
}

describe('the treasury health probe', () => {
  it('answers ok, then blocked_by_issuer while the issuer blocks the treasury, reusing an answer for its cache period', async () => {
    const { address } = await treasuryWorld(1_000_000n);
    let clock = 0;
    const probe = createTreasuryHealthProbe({
      rpcUrl: anvil.rpcUrl,
      chainId: CHAIN_ID,
      usdtAddress: usdt,
      treasuryAddress: address,
      cacheMs: 1_000,
      now: () => clock,
    });
    await expect(probe.treasuryCanSend()).resolves.toEqual({ ok: true });

    await mined(await setBlocked(address, true));
    // Within the cache period: the answer already read.
    clock = 999;
    await expect(probe.treasuryCanSend()).resolves.toEqual({ ok: true });
    clock = 1_000;
    await expect(probe.treasuryCanSend()).resolves.toEqual({
      ok: false,
      reason: 'blocked_by_issuer',
      detail: expect.stringContaining(address),
    });

    await mined(await setBlocked(address, false));
    clock = 2_000;
    await expect(probe.treasuryCanSend()).resolves.toEqual({ ok: true });
  });

  it('throws, and keeps no answer, while the chain cannot be read', async () => {
    const probe = createTreasuryHealthProbe({
      rpcUrl: `http://127.0.0.1:${await freePort()}`,
      chainId: CHAIN_ID,
      usdtAddress: usdt,
      treasuryAddress: providerWallet.address,
    });
    await expect(probe.treasuryCanSend()).rejects.toMatchObject({ name: 'ChainError', kind: 'network' });
  });
});

describe('a treasury the issuer blocked', () => {
  it('before signing: nothing is signed, the send waits (TreasuryCannotSend, counted), and completes once unblocked', async () => {
    const world = await treasuryWorld(10_000_000n);
    const req = world.request('3000000');
    await mined(await setBlocked(world.address, true));

    for (let attempt = 1; attempt <= 2; attempt++) {
      const failure = await failureOf(world.activities.sendTreasuryTransfer(req));
      expect({ type: failure.type, nonRetryable: failure.nonRetryable, message: failure.message }).toEqual({
        type: 'TreasuryCannotSend',
        nonRetryable: false,
        message: expect.stringContaining('blocked_by_issuer'),
      });
      expect(await counter(world.metrics, 'treasuryCannotSend', { reason: 'blocked_by_issuer' })).toBe(
        attempt,
      );
    }
    expect(await rounds(req.payoutId)).toEqual([]);
    expect(world.logs).toContainEqual(
      expect.objectContaining({ event: 'treasury_cannot_send', payoutId: req.payoutId }),
    );

    await mined(await setBlocked(world.address, false));
    const txHash = sentHash(await world.activities.sendTreasuryTransfer(req));
    await mined(txHash);
    await expect(world.activities.confirmTreasuryTransfer(req)).resolves.toEqual({
      status: 'confirmed',
      txHash,
      round: 0,
    });
  });

  it('after signing: the mined revert closes the round, the payout waits, then a new round pays the receiver once', async () => {
    const world = await treasuryWorld(10_000_000n);
    const req = world.request('4000000');
    await anvilRpc('evm_setAutomine', [false]);
    const first = sentHash(await world.activities.sendTreasuryTransfer(req));
    // The block lands in the same block as our transfer, ahead of it (a higher tip).
    await setBlocked(world.address, true);
    await anvilRpc('evm_mine');
    await anvilRpc('evm_setAutomine', [true]);
    expect((await mined(first)).status).toBe('reverted');
    // Not final yet: the round stays open (a reorg could still run the transfer again).
    await expect(world.activities.confirmTreasuryTransfer(req)).rejects.toMatchObject({
      message: expect.stringMatching(/closes once the revert is finalized/),
    });
    await finalize();

    await expect(world.activities.confirmTreasuryTransfer(req)).resolves.toEqual({
      status: 'reverted_by_sender',
      txHash: first,
      round: 0,
    });
    // A retry of the check (its answer lost) answers the same; the round is closed once.
    await expect(world.activities.confirmTreasuryTransfer(req)).resolves.toEqual({
      status: 'reverted_by_sender',
      txHash: first,
      round: 0,
    });
    expect(await counter(world.metrics, 'treasuryCannotSend', { reason: 'blocked_by_issuer' })).toBe(1);
    const firstNonce = (await rpc.getTransaction({ hash: first })).nonce;
    expect(await rounds(req.payoutId)).toEqual([
      { round: 0, nonce: String(firstNonce), reverted: true, mined: first },
    ]);

    // Still blocked: the new round is not signed.
    await expect(world.activities.sendTreasuryTransfer(req)).rejects.toMatchObject({
      type: 'TreasuryCannotSend',
    });
    expect(await rounds(req.payoutId)).toHaveLength(1);

    await mined(await setBlocked(world.address, false));
    const second = sentHash(await world.activities.sendTreasuryTransfer(req));
    expect(second).not.toBe(first);
    await mined(second);
    await expect(world.activities.confirmTreasuryTransfer(req)).resolves.toEqual({
      status: 'confirmed',
      txHash: second,
      round: 1,
    });
    expect(await rounds(req.payoutId)).toEqual([
      { round: 0, nonce: String(firstNonce), reverted: true, mined: first },
      { round: 1, nonce: String(firstNonce + 1), reverted: false, mined: second },
    ]);
    expect(await countTransfersTo({ rpcUrl: anvil.rpcUrl, usdtAddress: usdt, to: req.to })).toEqual({
      count: 1,
      total: 4_000_000n,
      txHashes: [second],
    });
    // A retry of the send re-broadcasts the open round: nothing new is signed.
    await expect(world.activities.sendTreasuryTransfer(req)).resolves.toEqual({ txHash: second });
  });
});

describe('a mined treasury transfer that reverted', () => {
  it('for lack of USDT taken from under it: treated as an empty treasury, sent again once topped up', async () => {
    const world = await treasuryWorld(5_000_000n);
    const req = world.request('3000000');
    // A spender the treasury once allowed takes its USDT, ahead of our transfer in the same block.
    const spender = anvilAccount('spare');
    await mined(
      await wallet(world.key).writeContract({
        address: usdt,
        abi: APPROVE_ABI,
        functionName: 'approve',
        args: [spender.address, 5_000_000n],
        chain: null,
      }),
    );
    await anvilRpc('evm_setAutomine', [false]);
    const first = sentHash(await world.activities.sendTreasuryTransfer(req));
    const drain = await wallet(spender.privateKey).writeContract({
      address: usdt,
      abi: APPROVE_ABI,
      functionName: 'transferFrom',
      args: [world.address, spender.address, 5_000_000n],
      chain: null,
      // Estimated on the pending state (ours first), it would be refused: its gas is set.
      gas: 100_000n,
      maxPriorityFeePerGas: 100_000_000_000n,
      maxFeePerGas: 1_000_000_000_000n,
    });
    await anvilRpc('evm_mine');
    await anvilRpc('evm_setAutomine', [true]);
    expect((await mined(drain)).status).toBe('success');
    expect((await mined(first)).status).toBe('reverted');
    await finalize();

    await expect(world.activities.confirmTreasuryTransfer(req)).resolves.toEqual({
      status: 'reverted_by_sender',
      txHash: first,
      round: 0,
    });
    expect(await counter(world.metrics, 'treasuryInsufficientFunds')).toBe(1);
    await expect(world.activities.sendTreasuryTransfer(req)).rejects.toMatchObject({
      type: 'TreasuryInsufficientFunds',
    });

    await fund(world.address, 3_000_000n);
    const second = sentHash(await world.activities.sendTreasuryTransfer(req));
    await mined(second);
    await expect(world.activities.confirmTreasuryTransfer(req)).resolves.toEqual({
      status: 'confirmed',
      txHash: second,
      round: 1,
    });
    expect((await countTransfersTo({ rpcUrl: anvil.rpcUrl, usdtAddress: usdt, to: req.to })).count).toBe(1);
  });

  it('for a cause that is not the treasury (out of gas): reverted, final', async () => {
    const world = await treasuryWorld(10_000_000n);
    const req = world.request('2000000');
    const account = privateKeyToAccount(world.key);
    const block = await rpc.getBlock({ blockTag: 'latest' });
    // Signed with far too little gas for a token transfer: it is mined, and runs out of gas.
    await getOrCreateTreasuryTransfer(
      db,
      {
        payoutId: req.payoutId,
        toAddress: req.to,
        amountUnits: 2_000_000n,
        chainId: CHAIN_ID,
        fromAddress: world.address,
      },
      () => world.ledger.nextNonce(),
      async (nonce) => {
        const rawTransaction = await account.signTransaction({
          type: 'eip1559',
          chainId: CHAIN_ID,
          to: usdt,
          data: encodeFunctionData({ abi: USDT_ABI, functionName: 'transfer', args: [req.to, 2_000_000n] }),
          nonce,
          gas: 30_000n,
          maxFeePerGas: block.baseFeePerGas! * 2n + 1_000_000_000n,
          maxPriorityFeePerGas: 1_000_000_000n,
        });
        return { rawTransaction, txHash: keccak256(rawTransaction) };
      },
    );
    const txHash = sentHash(await world.activities.sendTreasuryTransfer(req));
    expect((await mined(txHash)).status).toBe('reverted');

    // Not yet final: a reorganisation could mine it again in a state where it succeeds.
    await expect(world.activities.confirmTreasuryTransfer(req)).rejects.toMatchObject({
      type: 'NotYetConfirmed',
      message: expect.stringMatching(/not yet finalized/),
    });
    await finalize();
    await expect(world.activities.confirmTreasuryTransfer(req)).resolves.toEqual({
      status: 'reverted',
      txHash,
      round: 0,
    });
    expect(await rounds(req.payoutId)).toEqual([
      { round: 0, nonce: expect.any(String), reverted: false, mined: txHash },
    ]);
    expect(await counter(world.metrics, 'treasuryCannotSend')).toBe(0);
  });
});

describe('a treasury transfer queued behind a nonce gap', () => {
  /** Signs and stores the payout's transfer at exactly `nonce`, without broadcasting it. */
  async function storedAt(
    world: Awaited<ReturnType<typeof treasuryWorld>>,
    nonce: number,
    amountUnits: string,
  ) {
    const req = world.request(amountUnits);
    await getOrCreateTreasuryTransfer(
      db,
      {
        payoutId: req.payoutId,
        toAddress: req.to,
        amountUnits: BigInt(amountUnits),
        chainId: CHAIN_ID,
        fromAddress: world.address,
      },
      async () => nonce,
      (n) => world.ledger.signTransfer({ to: req.to as Address, amountUnits: BigInt(amountUnits), nonce: n }),
    );
    return req;
  }
  const attempts = async (payoutId: string) =>
    (await db.query('SELECT 1 FROM treasury_transfer_attempts WHERE payout_id = $1', [payoutId])).rowCount;

  it('is reported with the gap’s nonces, counted and logged, never signed again, and lands once the gap is filled', async () => {
    const world = await treasuryWorld(10_000_000n);
    const next = await world.ledger.nextNonce();
    // Nothing of ours holds `next`, `next + 1` (a transaction lost with its row, say): ours waits.
    const req = await storedAt(world, next + 2, '1000000');
    await world.activities.sendTreasuryTransfer(req);

    for (let check = 1; check <= 2; check++) {
      const failure = await failureOf(world.activities.confirmTreasuryTransfer(req));
      expect({ type: failure.type, nonRetryable: failure.nonRetryable, details: failure.details }).toEqual({
        type: 'TreasuryNonceGap',
        nonRetryable: false,
        details: [{ nonces: [next, next + 1] }],
      });
      expect(failure.message).toContain(`nonce(s) ${next}, ${next + 1}`);
      expect(await counter(world.metrics, 'treasuryNonceGaps')).toBe(check);
    }
    expect(world.logs).toContainEqual(
      expect.objectContaining({
        event: 'treasury_nonce_gap',
        payoutId: req.payoutId,
        nonce: next + 2,
        gap: [next, next + 1],
      }),
    );
    expect(await attempts(req.payoutId)).toBe(1);

    // Whoever used those nonces: once they are, ours is mined, exactly as first signed.
    for (const nonce of [next, next + 1]) {
      const other = await world.ledger.signTransfer({ to: providerWallet.address, amountUnits: 1n, nonce });
      await world.ledger.broadcast(other.rawTransaction);
    }
    const { rows } = await db.query<{ tx_hash: Hex }>(
      'SELECT tx_hash FROM treasury_transfers WHERE payout_id = $1',
      [req.payoutId],
    );
    await mined(rows[0]!.tx_hash);
    await expect(world.activities.confirmTreasuryTransfer(req)).resolves.toEqual({
      status: 'confirmed',
      txHash: rows[0]!.tx_hash,
      round: 0,
    });
    expect(await attempts(req.payoutId)).toBe(1);
  });

  it('is no gap when our own transfer below it was only dropped from the pool: that one is sent again as signed', async () => {
    const world = await treasuryWorld(10_000_000n);
    const next = await world.ledger.nextNonce();
    // The transfer at `next` is signed and stored, and the node has lost it (never broadcast here).
    const below = await storedAt(world, next, '1000000');
    const req = await storedAt(world, next + 1, '2000000');
    await world.activities.sendTreasuryTransfer(req);

    // The check sends the one below again, so nothing is missing any more: ours just waits.
    await expect(world.activities.confirmTreasuryTransfer(req)).rejects.toMatchObject({
      type: 'NotYetConfirmed',
    });
    expect(await counter(world.metrics, 'treasuryNonceGaps')).toBe(0);
    expect(world.logs).toContainEqual(
      expect.objectContaining({ event: 'treasury_transfer_rebroadcast', payoutId: below.payoutId }),
    );
    for (const r of [below, req]) {
      const { rows } = await db.query<{ tx_hash: Hex }>(
        'SELECT tx_hash FROM treasury_transfers WHERE payout_id = $1',
        [r.payoutId],
      );
      await mined(rows[0]!.tx_hash);
      await expect(world.activities.confirmTreasuryTransfer(r)).resolves.toMatchObject({
        status: 'confirmed',
      });
      expect(await attempts(r.payoutId)).toBe(1);
    }
  });
});

describe('a treasury key rotated out', () => {
  const baseFee = async (gwei: bigint | 'x100') => {
    const block = await rpc.getBlock({ blockTag: 'latest' });
    const fee = gwei === 'x100' ? block.baseFeePerGas! * 100n : gwei * 1_000_000_000n;
    await anvilRpc('anvil_setNextBlockBaseFeePerGas', [`0x${fee.toString(16)}`]);
    await anvilRpc('evm_mine');
  };
  afterEach(() => baseFee(1n));

  it('leaves what it signed as signed: sent again by the new key’s worker, never re-priced by it', async () => {
    const old = await treasuryWorld(10_000_000n);
    const current = await treasuryWorld(0n, { repriceAfterSeconds: 0 });
    const req = old.request('1500000');
    await baseFee(1n);
    await anvilRpc('evm_setAutomine', [false]);
    await old.activities.sendTreasuryTransfer(req);
    const { rows } = await db.query<{ raw_transaction: Hex; tx_hash: Hex }>(
      'SELECT raw_transaction, tx_hash FROM treasury_transfers WHERE payout_id = $1',
      [req.payoutId],
    );
    const { raw_transaction: raw, tx_hash: txHash } = rows[0]!;

    // The network asks far more than the transfer offers; only the old key could sign its replacement.
    await baseFee('x100');
    await expect(current.ledger.signReplacement(raw)).rejects.toMatchObject({ kind: 'invalid' });
    const waiting = await failureOf(current.activities.confirmTreasuryTransfer(req));
    expect(['NotYetConfirmed', 'BroadcastFailed']).toContain(waiting.type);
    const attempts = async () =>
      (await db.query('SELECT 1 FROM treasury_transfer_attempts WHERE payout_id = $1', [req.payoutId]))
        .rowCount;
    expect(await attempts()).toBe(1);

    // Fees fall back: the transfer lands as the old key signed it.
    await baseFee(1n);
    await anvilRpc('evm_setAutomine', [true]);
    await current.activities.confirmTreasuryTransfer(req).catch(() => undefined);
    await mined(txHash);
    await expect(current.activities.confirmTreasuryTransfer(req)).resolves.toEqual({
      status: 'confirmed',
      txHash,
      round: 0,
    });
    expect(await attempts()).toBe(1);
    expect((await countTransfersTo({ rpcUrl: anvil.rpcUrl, usdtAddress: usdt, to: req.to })).count).toBe(1);
  });
});
