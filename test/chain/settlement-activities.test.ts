import { createChainAndDenylistScreening } from '../../src/adapters/screening/receiver-screening';
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { createPublicClient, http, parseTransaction, type Address, type Hex, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { createActivities } from '../../src/activities';
import { createUsdtLedger } from '../../src/adapters/chain/usdt-ledger';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { denyWallet } from '../../src/adapters/db/screening-denylist-repo';
import {
  closeTreasuryRound,
  getOrCreateTreasuryTransfer,
} from '../../src/adapters/db/treasury-transfers-repo';
import { createHttpProvider } from '../../src/adapters/provider/http-provider';
import { createLogger } from '../../src/observability/logger';
import { createMetrics, type Metrics } from '../../src/observability/metrics';
import { maxGasCostOf } from '../../src/adapters/chain/treasury-signing';
import { deployBatchSender } from './batch-sender';
import { anvilAccount } from '../../dev/local/infra/anvil';
import { startTestChain, type TestChain, sentHash } from '../support/chain';
import { testDatabaseUrl } from '../support/env';

// The settlement activities against a real chain (anvil, chain id 42161) and the real PostgreSQL:
// one on-chain transfer settles at most one payout; an empty treasury waits instead of failing; a
// nonce conflict is final only once proven.
const CHAIN_ID = 42161;
const providerWallet = anvilAccount('provider-sandbox');

let anvil: TestChain;
let usdt: Address;
let rpc: PublicClient;
let db: Db;

beforeAll(async () => {
  anvil = await startTestChain({
    chainId: CHAIN_ID,
    funded: [{ wallet: providerWallet.address, usdtUnits: 1_000_000_000n }],
  });
  usdt = anvil.usdtAddress;
  rpc = createPublicClient({ transport: http(anvil.rpcUrl) });
  db = createPool(testDatabaseUrl(), 3);
}, 60_000);
afterAll(async () => {
  await db?.end();
  await anvil?.stop();
});

/** A treasury of its own (ETH for gas, optionally USDT), and the activities bound to it. */
async function treasuryWorld(usdtUnits: bigint, opts: { repriceAfterSeconds?: number } = {}) {
  const { address, privateKey: key } = await anvil.newWallet(usdtUnits);
  const ledger = createUsdtLedger({
    rpcUrl: anvil.rpcUrl,
    chainId: CHAIN_ID,
    usdtAddress: usdt,
    treasuryPrivateKey: key,
  });
  const metrics = createMetrics();
  const activities = createActivities({
    db,
    ledger,
    // Never called here: these activities talk to the chain and PostgreSQL only.
    provider: createHttpProvider({ baseUrl: 'http://127.0.0.1:9' }),
    logger: createLogger({ level: 'silent', name: 'test' }),
    metrics,
    nonceConflictProof: { receiptLookups: 3, spacingMs: 20 },
    treasuryRepriceAfterSeconds: opts.repriceAfterSeconds ?? 120,
    // Only the denylist: these activity tests never screen (the screening step has tests of its own).
    screening: createChainAndDenylistScreening({
      rpcUrl: anvil.rpcUrl,
      db: db,
      sources: ['denylist'],
      tokenAddress: usdt,
      oracleAddress: usdt,
      cacheSeconds: 0,
    }),
  });
  return { key, address, ledger, metrics, activities };
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

/** A mismatch is no proof: retryable TransferMismatch, the payout waits. */
async function expectMismatch(promise: Promise<unknown>, reason: string) {
  const failure = await failureOf(promise);
  expect({ type: failure.type, nonRetryable: failure.nonRetryable, message: failure.message }).toEqual({
    type: 'TransferMismatch',
    nonRetryable: false,
    message: expect.stringContaining(reason),
  });
}

async function mismatchRows(payoutId: string) {
  const { rows } = await db.query(
    'SELECT tx_hash, reason, checks FROM settlement_transfer_mismatches WHERE payout_id = $1',
    [payoutId],
  );
  return rows;
}

it('claims a confirmed transfer for one payout; the same transfer reported for another waits, alerted once', async () => {
  const { activities, metrics } = await treasuryWorld(0n);
  const receiver = privateKeyToAddress(generatePrivateKey());
  const txHash = await anvil.transfer(providerWallet.privateKey, receiver, 5_000_000n);
  const check = { txHash, to: receiver, amountUnits: '5000000', minConfirmations: 1 };
  const [first, second] = [randomUUID(), randomUUID()];

  await expect(activities.verifyUsdtTransfer({ ...check, payoutId: first })).resolves.toBe('confirmed');
  // An activity retry for the same payout is the same claim.
  await expect(activities.verifyUsdtTransfer({ ...check, payoutId: first })).resolves.toBe('confirmed');
  // Not proof that no USDT moved for the second payout: it keeps waiting (retried), never FAILED here.
  await expectMismatch(activities.verifyUsdtTransfer({ ...check, payoutId: second }), 'claimed_by_other');
  await expectMismatch(activities.verifyUsdtTransfer({ ...check, payoutId: second }), 'claimed_by_other');

  const { rows } = await db.query(
    'SELECT payout_id, chain_id, log_index FROM settlement_transfer_claims WHERE tx_hash = $1',
    [txHash.toLowerCase()],
  );
  expect(rows).toEqual([{ payout_id: first, chain_id: CHAIN_ID, log_index: 0 }]);
  // Counted once per payout and transaction, however often the check retries.
  expect(await counter(metrics, 'transferClaimConflicts')).toBe(1);
  expect(await counter(metrics, 'transferMismatches', { reason: 'claimed_by_other' })).toBe(1);
  expect(await mismatchRows(second)).toEqual([
    { tx_hash: txHash.toLowerCase(), reason: 'claimed_by_other', checks: 2 },
  ]);
});

it('one transaction paying two payouts alike settles both; a third is a mismatch; retries keep their claim', async () => {
  const { activities, metrics } = await treasuryWorld(0n);
  const pay = await deployBatchSender({ rpcUrl: anvil.rpcUrl, usdt, payerKey: providerWallet.privateKey });
  const receiver = privateKeyToAddress(generatePrivateKey());
  const txHash = await pay([
    { to: receiver, units: 2_000_000n },
    { to: receiver, units: 2_000_000n },
  ]);
  const receipt = await rpc.getTransactionReceipt({ hash: txHash });
  const logIndexes = receipt.logs.map((l) => l.logIndex);
  const check = { txHash, to: receiver, amountUnits: '2000000', minConfirmations: 1 };
  const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];

  await expect(activities.verifyUsdtTransfer({ ...check, payoutId: a })).resolves.toBe('confirmed');
  await expect(activities.verifyUsdtTransfer({ ...check, payoutId: b })).resolves.toBe('confirmed');
  // Retries of either are idempotent: the claim each already holds, not the other's.
  await expect(activities.verifyUsdtTransfer({ ...check, payoutId: b })).resolves.toBe('confirmed');
  await expect(activities.verifyUsdtTransfer({ ...check, payoutId: a })).resolves.toBe('confirmed');
  await expectMismatch(activities.verifyUsdtTransfer({ ...check, payoutId: c }), 'claimed_by_other');

  const { rows } = await db.query<{ payout_id: string; log_index: number }>(
    'SELECT payout_id, log_index FROM settlement_transfer_claims WHERE tx_hash = $1 ORDER BY log_index',
    [txHash.toLowerCase()],
  );
  expect(rows).toEqual([
    { payout_id: a, log_index: logIndexes[0] },
    { payout_id: b, log_index: logIndexes[1] },
  ]);
  expect(await counter(metrics, 'transferMismatches', { reason: 'claimed_by_other' })).toBe(1);
});

it('two payouts claiming one batched transaction at once take one transfer each', async () => {
  const { activities } = await treasuryWorld(0n);
  const pay = await deployBatchSender({ rpcUrl: anvil.rpcUrl, usdt, payerKey: providerWallet.privateKey });
  const receiver = privateKeyToAddress(generatePrivateKey());
  const txHash = await pay([
    { to: receiver, units: 1_500_000n },
    { to: receiver, units: 1_500_000n },
  ]);
  const check = { txHash, to: receiver, amountUnits: '1500000', minConfirmations: 1 };
  const payouts = [randomUUID(), randomUUID()];
  await expect(
    Promise.all(
      payouts.flatMap((payoutId) => [0, 1].map(() => activities.verifyUsdtTransfer({ ...check, payoutId }))),
    ),
  ).resolves.toEqual(['confirmed', 'confirmed', 'confirmed', 'confirmed']);
  const { rows } = await db.query<{ payout_id: string }>(
    'SELECT payout_id FROM settlement_transfer_claims WHERE tx_hash = $1',
    [txHash.toLowerCase()],
  );
  expect(rows.map((r) => r.payout_id).sort()).toEqual([...payouts].sort());
});

it('a mined transaction without the payout’s transfer is no proof: TransferMismatch, retried, alerted once', async () => {
  const { activities, metrics } = await treasuryWorld(0n);
  const receiver = privateKeyToAddress(generatePrivateKey());
  const txHash = await anvil.transfer(providerWallet.privateKey, receiver, 5_000_000n);
  const payoutId = randomUUID();
  const wrongAmount = { payoutId, txHash, to: receiver, amountUnits: '5000001', minConfirmations: 1 };
  await expectMismatch(activities.verifyUsdtTransfer(wrongAmount), 'no_matching_transfer');
  await expectMismatch(activities.verifyUsdtTransfer(wrongAmount), 'no_matching_transfer');
  expect(await counter(metrics, 'transferMismatches', { reason: 'no_matching_transfer' })).toBe(1);
  expect(await counter(metrics, 'transferClaimConflicts')).toBe(0);
  expect(await mismatchRows(payoutId)).toEqual([
    { tx_hash: txHash.toLowerCase(), reason: 'no_matching_transfer', checks: 2 },
  ]);
  const { rows } = await db.query('SELECT 1 FROM settlement_transfer_claims WHERE payout_id = $1', [
    payoutId,
  ]);
  expect(rows).toHaveLength(0);
});

it('an empty treasury is not final: the transfer retries with the alert until topped up, then lands', async () => {
  const world = await treasuryWorld(0n);
  const receiver = privateKeyToAddress(generatePrivateKey());
  const req = { payoutId: randomUUID(), to: receiver, amountUnits: '3000000' };

  const failure = await failureOf(world.activities.sendTreasuryTransfer(req));
  expect({ type: failure.type, nonRetryable: failure.nonRetryable }).toEqual({
    type: 'TreasuryInsufficientFunds',
    nonRetryable: false,
  });
  expect(await counter(world.metrics, 'treasuryInsufficientFunds')).toBe(1);

  await anvil.transfer(providerWallet.privateKey, world.address, 3_000_000n);
  const txHash = sentHash(await world.activities.sendTreasuryTransfer(req));
  await rpc.waitForTransactionReceipt({ hash: txHash, pollingInterval: 50 });
  await expect(
    world.activities.confirmTreasuryTransfer({ ...req, minConfirmations: 1 }),
  ).resolves.toMatchObject({ status: 'confirmed' });
});

it('a nonce taken by another transaction is final only once finalized past ours with no receipt for ours', async () => {
  const world = await treasuryWorld(10_000_000n);
  const receiver = privateKeyToAddress(generatePrivateKey());
  const req = { payoutId: randomUUID(), to: receiver, amountUnits: '1000000' };
  const nonce = await world.ledger.nextNonce();
  // Our transfer is signed and stored; before it is broadcast, another transaction takes its nonce.
  await getOrCreateTreasuryTransfer(
    db,
    {
      payoutId: req.payoutId,
      toAddress: receiver,
      amountUnits: 1_000_000n,
      chainId: CHAIN_ID,
      fromAddress: world.address,
    },
    async () => nonce,
    (n) => world.ledger.signTransfer({ to: receiver, amountUnits: 1_000_000n, nonce: n }),
  );
  const rival = await world.ledger.signTransfer({
    to: privateKeyToAddress(generatePrivateKey()),
    amountUnits: 1n,
    nonce,
  });
  await world.ledger.broadcast(rival.rawTransaction);
  await rpc.waitForTransactionReceipt({ hash: rival.txHash, pollingInterval: 50 });

  // "nonce too low" from the node, but the block holding the rival is not finalized: not proof.
  const early = await failureOf(world.activities.sendTreasuryTransfer(req));
  expect(early.nonRetryable).toBe(false);

  await anvil.rpc('anvil_mine', ['0x80']);
  expect(await world.ledger.finalizedNonce()).toBeGreaterThan(nonce);
  const proven = await failureOf(world.activities.sendTreasuryTransfer(req));
  // The refusal names the round it proves dead: the payout closes that one only.
  expect({ type: proven.type, nonRetryable: proven.nonRetryable, details: proven.details }).toEqual({
    type: 'ChainRejected',
    nonRetryable: true,
    details: [{ round: 0 }],
  });
});

describe('treasury transfers signed and not yet mined', () => {
  afterEach(async () => {
    await anvil.rpc('evm_setAutomine', [true]);
  });

  it('reserve their USDT and gas: a new transfer is signed only if the treasury covers them all', async () => {
    const world = await treasuryWorld(10_000_000n);
    const to = () => privateKeyToAddress(generatePrivateKey());
    const first = { payoutId: randomUUID(), to: to(), amountUnits: '6000000' };
    const second = { payoutId: randomUUID(), to: to(), amountUnits: '5000000' };
    const third = { payoutId: randomUUID(), to: to(), amountUnits: '4000000' };

    await anvil.rpc('evm_setAutomine', [false]);
    await world.activities.sendTreasuryTransfer(first);
    // 10 USDT cover the 5 asked, but not with the 6 signed and still waiting in the pool.
    const refused = await failureOf(world.activities.sendTreasuryTransfer(second));
    expect({ type: refused.type, nonRetryable: refused.nonRetryable }).toEqual({
      type: 'TreasuryInsufficientFunds',
      nonRetryable: false,
    });
    expect(refused.message).toMatch(/plus 6000000 for transfers signed and not yet mined/);
    expect(await counter(world.metrics, 'treasuryInsufficientFunds')).toBe(1);

    // 6 + 4 fit in 10, but the gas does not: ETH for the waiting transfer's worst case only.
    const { rows } = await db.query<{ raw_transaction: Hex }>(
      'SELECT raw_transaction FROM treasury_transfers WHERE payout_id = $1',
      [first.payoutId],
    );
    const reservedGas = maxGasCostOf(rows[0]!.raw_transaction);
    await anvil.rpc('anvil_setBalance', [world.address, `0x${reservedGas.toString(16)}`]);
    const noGas = await failureOf(world.activities.sendTreasuryTransfer(third));
    expect({ type: noGas.type, message: noGas.message }).toEqual({
      type: 'TreasuryInsufficientFunds',
      message: expect.stringMatching(/wei/),
    });
    expect(await counter(world.metrics, 'treasuryInsufficientFunds')).toBe(2);

    await anvil.rpc('anvil_setBalance', [world.address, '0x56BC75E2D63100000']);
    await world.activities.sendTreasuryTransfer(third);
    await anvil.rpc('evm_mine');
    for (const req of [first, third]) {
      await expect(
        world.activities.confirmTreasuryTransfer({ ...req, minConfirmations: 1 }),
      ).resolves.toMatchObject({ status: 'confirmed' });
    }
    expect(await world.ledger.balanceOf(world.address)).toBe(0n);
  });
});

describe('a treasury transfer left unmined', () => {
  /** The base fee jumps far above what the pooled transfer offers: anvil drops it, it can never be mined. */
  const priceOut = async () => {
    const block = await rpc.getBlock({ blockTag: 'latest' });
    await anvil.rpc('anvil_setNextBlockBaseFeePerGas', [`0x${(block.baseFeePerGas! * 100n).toString(16)}`]);
    await anvil.rpc('evm_mine');
  };
  const cheapBlocks = async () => {
    await anvil.rpc('anvil_setNextBlockBaseFeePerGas', ['0x3b9aca00']); // 1 gwei
    await anvil.rpc('evm_mine');
  };
  const attempts = async (payoutId: string) =>
    (
      await db.query<{ tx_hash: Hex; attempt: number }>(
        'SELECT attempt, tx_hash FROM treasury_transfer_attempts WHERE payout_id = $1 ORDER BY attempt',
        [payoutId],
      )
    ).rows.map((r) => r.tx_hash);
  const minedHash = async (payoutId: string) =>
    (
      await db.query<{ mined_tx_hash: string | null }>(
        'SELECT mined_tx_hash FROM treasury_transfers WHERE payout_id = $1',
        [payoutId],
      )
    ).rows[0]?.mined_tx_hash;

  beforeEach(async () => {
    await cheapBlocks();
  });
  /** Another node mined `raw` (an earlier transaction at the same nonce) where this one pooled `dropped`. */
  const minedInstead = async (
    world: { ledger: { broadcast(raw: Hex): Promise<Hex> } },
    dropped: Hex,
    raw: Hex,
    /** Run once `dropped` is gone from the pool (fees falling back). */
    then?: () => Promise<void>,
  ) => {
    await anvil.rpc('anvil_dropTransaction', [dropped]);
    await then?.();
    const hash = await world.ledger.broadcast(raw);
    await anvil.rpc('evm_mine');
    await rpc.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  };
  /** A funded treasury whose transactions wait in the pool until the test mines a block. */
  const holdingWorld = async (usdtUnits: bigint) => {
    const world = await treasuryWorld(usdtUnits, { repriceAfterSeconds: 0 });
    await anvil.rpc('evm_setAutomine', [false]);
    return world;
  };
  afterEach(async () => {
    await anvil.rpc('evm_setAutomine', [true]);
    await cheapBlocks();
  });

  it('is signed again at the same nonce with higher fees, stored before broadcast, and lands once', async () => {
    const world = await holdingWorld(10_000_000n);
    const receiver = privateKeyToAddress(generatePrivateKey());
    const req = { payoutId: randomUUID(), to: receiver, amountUnits: '4000000', minConfirmations: 1 };
    const original = sentHash(await world.activities.sendTreasuryTransfer(req));

    // Waiting in the pool at today's fees: re-pricing cannot help, so it is not re-priced.
    await expect(world.activities.confirmTreasuryTransfer(req)).rejects.toMatchObject({
      type: 'NotYetConfirmed',
    });
    expect(await attempts(req.payoutId)).toEqual([original]);

    await priceOut();
    await expect(world.activities.confirmTreasuryTransfer(req)).rejects.toMatchObject({
      type: 'NotYetConfirmed',
      message: expect.stringMatching(/re-priced/),
    });
    const stored = await attempts(req.payoutId);
    expect(stored).toHaveLength(2);
    const replacement = stored[1]!;
    const [originalRaw, replacementRaw] = await rawOf(req.payoutId);
    const [oldTx, newTx] = [parseTx(originalRaw!), parseTx(replacementRaw!)];
    expect((await rpc.getTransaction({ hash: replacement })).hash).toBe(replacement); // broadcast
    expect(newTx.nonce).toBe(oldTx.nonce);
    expect(newTx.maxFee * 100n).toBeGreaterThanOrEqual(oldTx.maxFee * 110n);
    expect(newTx.tip * 100n).toBeGreaterThanOrEqual(oldTx.tip * 110n);
    expect(await counter(world.metrics, 'treasuryTransfersRepriced')).toBe(1);

    await anvil.rpc('evm_mine');
    // The payout records the hash that was mined, not the one first signed.
    await expect(world.activities.confirmTreasuryTransfer(req)).resolves.toEqual({
      status: 'confirmed',
      txHash: replacement,
      round: 0,
    });
    expect(await minedHash(req.payoutId)).toBe(replacement);
    expect(await anvil.transfersTo(receiver)).toEqual({
      count: 1,
      total: 4_000_000n,
      txHashes: [replacement],
    });
    // A retry of the send re-broadcasts the mined replacement: nothing new is signed.
    await expect(world.activities.sendTreasuryTransfer(req)).resolves.toEqual({ txHash: replacement });
    expect(await attempts(req.payoutId)).toEqual([original, replacement]);
  });

  it('accepts the original transaction when it is the one mined after a replacement was signed', async () => {
    const world = await holdingWorld(10_000_000n);
    const receiver = privateKeyToAddress(generatePrivateKey());
    const req = { payoutId: randomUUID(), to: receiver, amountUnits: '3000000', minConfirmations: 1 };
    const original = sentHash(await world.activities.sendTreasuryTransfer(req));
    const [originalRaw] = await rawOf(req.payoutId);
    await priceOut();
    await expect(world.activities.confirmTreasuryTransfer(req)).rejects.toMatchObject({
      message: expect.stringMatching(/re-priced/),
    });
    const [, replacement] = await attempts(req.payoutId);

    // Another node still had the original, and mined it once fees fell back: the replacement never lands.
    await minedInstead(world, replacement!, originalRaw!, cheapBlocks);

    await expect(world.activities.confirmTreasuryTransfer(req)).resolves.toEqual({
      status: 'confirmed',
      txHash: original,
      round: 0,
    });
    expect(await minedHash(req.payoutId)).toBe(original);
    expect(await anvil.transfersTo(receiver)).toEqual({
      count: 1,
      total: 3_000_000n,
      txHashes: [original],
    });
  });

  it('is cancelled at its nonce when its receiver is flagged while it waits: FAILED once the cancel is final', async () => {
    const world = await holdingWorld(10_000_000n);
    const receiver = privateKeyToAddress(generatePrivateKey());
    const req = { payoutId: randomUUID(), to: receiver, amountUnits: '2000000', minConfirmations: 1 };
    // A payout that knows of a flag no operator released signs no new round.
    await expect(world.activities.sendTreasuryTransfer({ ...req, onlyResend: true })).resolves.toEqual({
      notSigned: 'receiver_flagged',
    });
    expect(await attempts(req.payoutId)).toEqual([]);
    const original = sentHash(await world.activities.sendTreasuryTransfer(req));
    // Not asked to (a payout an operator released, or workflow code that knows no cancel): never cancelled.
    await denyWallet(db, { wallet: receiver, by: 'test', reason: 'listed while the transfer waited' });
    await expect(world.activities.confirmTreasuryTransfer(req)).rejects.toMatchObject({
      type: 'NotYetConfirmed',
    });
    expect(await attempts(req.payoutId)).toEqual([original]);

    const cancelling = await failureOf(
      world.activities.confirmTreasuryTransfer({ ...req, cancel: 'if_flagged' }),
    );
    expect(cancelling).toMatchObject({ type: 'TreasuryTransferCancelling', nonRetryable: false });
    const [, cancel] = await attempts(req.payoutId);
    const [originalRaw, cancelRaw] = await rawOf(req.payoutId);
    const [oldTx, cancelTx] = [parseTransaction(originalRaw!), parseTransaction(cancelRaw!)];
    expect({ to: cancelTx.to?.toLowerCase(), value: cancelTx.value ?? 0n, nonce: cancelTx.nonce }).toEqual({
      to: world.address.toLowerCase(),
      value: 0n,
      nonce: oldTx.nonce,
    });
    expect(cancelTx.maxFeePerGas! * 100n).toBeGreaterThanOrEqual(oldTx.maxFeePerGas! * 110n);
    // Asked again before anything is mined: the same cancel, nothing else signed.
    await expect(
      world.activities.confirmTreasuryTransfer({ ...req, cancel: 'flag_known' }),
    ).rejects.toMatchObject({
      type: 'TreasuryTransferCancelling',
    });
    expect(await attempts(req.payoutId)).toEqual([original, cancel]);

    // The cancel (higher fees) takes the nonce; it is proof only once final.
    await anvil.rpc('evm_mine');
    await rpc.waitForTransactionReceipt({ hash: cancel!, pollingInterval: 50 });
    await expect(
      world.activities.confirmTreasuryTransfer({ ...req, cancel: 'if_flagged' }),
    ).rejects.toMatchObject({
      type: 'TreasuryTransferCancelling',
      message: expect.stringMatching(/final/),
    });
    await anvil.rpc('anvil_mine', ['0x41']);
    await expect(world.activities.confirmTreasuryTransfer({ ...req, cancel: 'if_flagged' })).resolves.toEqual(
      {
        status: 'cancelled',
        txHash: cancel,
        round: 0,
      },
    );
    // Workflow code that never asked for cancels is not told: it waits.
    await expect(world.activities.confirmTreasuryTransfer(req)).rejects.toMatchObject({
      type: 'TreasuryTransferCancelling',
    });
    expect((await anvil.transfersTo(receiver)).count).toBe(0);
    await expect(
      world.activities.closeTreasuryRounds({ payoutId: req.payoutId, deadRound: 0 }),
    ).resolves.toBe('closed');
  });

  it('a cancel left unmined by rising fees is signed again higher, and the one mined decides', async () => {
    const world = await holdingWorld(10_000_000n);
    const receiver = privateKeyToAddress(generatePrivateKey());
    const req = { payoutId: randomUUID(), to: receiver, amountUnits: '1500000', minConfirmations: 1 };
    const original = sentHash(await world.activities.sendTreasuryTransfer(req));
    const asked = { ...req, cancel: 'flag_known' as const };
    await expect(world.activities.confirmTreasuryTransfer(asked)).rejects.toMatchObject({
      type: 'TreasuryTransferCancelling',
    });
    const [, first] = await attempts(req.payoutId);
    // Fees the network asks no more than it offers: the cancel is not raised.
    await expect(world.activities.confirmTreasuryTransfer(asked)).rejects.toMatchObject({
      type: 'TreasuryTransferCancelling',
    });
    expect(await attempts(req.payoutId)).toEqual([original, first]);

    await priceOut();
    await expect(world.activities.confirmTreasuryTransfer(asked)).rejects.toMatchObject({
      type: 'TreasuryTransferCancelling',
    });
    const [, , second] = await attempts(req.payoutId);
    const [, firstRaw, secondRaw] = await rawOf(req.payoutId);
    const [a, b] = [parseTransaction(firstRaw!), parseTransaction(secondRaw!)];
    expect({ to: b.to, nonce: b.nonce }).toEqual({ to: a.to, nonce: a.nonce });
    expect(b.maxFeePerGas! * 100n).toBeGreaterThanOrEqual(a.maxFeePerGas! * 110n);
    await anvil.rpc('evm_mine');
    await rpc.waitForTransactionReceipt({ hash: second!, pollingInterval: 50 });
    await anvil.rpc('anvil_mine', ['0x41']);
    await expect(world.activities.confirmTreasuryTransfer(asked)).resolves.toEqual({
      status: 'cancelled',
      txHash: second,
      round: 0,
    });
    expect((await anvil.transfersTo(receiver)).count).toBe(0);
  });

  it('a transfer mined before its cancel pays the receiver: the chain decides, COMPLETED', async () => {
    const world = await holdingWorld(10_000_000n);
    const receiver = privateKeyToAddress(generatePrivateKey());
    const req = { payoutId: randomUUID(), to: receiver, amountUnits: '1000000', minConfirmations: 1 };
    const original = sentHash(await world.activities.sendTreasuryTransfer(req));
    const [originalRaw] = await rawOf(req.payoutId);
    // The payout knows of a flag already: cancelled at once, without screening.
    await expect(
      world.activities.confirmTreasuryTransfer({ ...req, cancel: 'flag_known' }),
    ).rejects.toMatchObject({
      type: 'TreasuryTransferCancelling',
    });
    const [, cancel] = await attempts(req.payoutId);
    // Another node had the transfer and mined it first: its cancel can never land.
    await minedInstead(world, cancel!, originalRaw!);
    await expect(world.activities.confirmTreasuryTransfer(req)).resolves.toEqual({
      status: 'confirmed',
      txHash: original,
      round: 0,
    });
  });

  it('a nonce past ours is not proven taken while any of our transactions for it has a receipt', async () => {
    const world = await holdingWorld(10_000_000n);
    const receiver = privateKeyToAddress(generatePrivateKey());
    const req = { payoutId: randomUUID(), to: receiver, amountUnits: '2000000', minConfirmations: 1 };
    await world.activities.sendTreasuryTransfer(req);
    // Re-priced twice: attempts 0, 1 and 2 share the nonce.
    for (let i = 0; i < 2; i++) {
      await priceOut();
      await expect(world.activities.confirmTreasuryTransfer(req)).rejects.toMatchObject({
        message: expect.stringMatching(/re-priced/),
      });
    }
    const stored = await attempts(req.payoutId);
    expect(stored).toHaveLength(3);
    const raws = await rawOf(req.payoutId);

    // The middle one is mined (another node had it), the latest never is.
    await anvil.rpc('anvil_dropTransaction', [stored[2]]);
    await cheapBlocks();
    await world.ledger.broadcast(raws[1]!);
    await anvil.rpc('evm_mine');
    await rpc.waitForTransactionReceipt({ hash: stored[1]!, pollingInterval: 50 });
    await anvil.rpc('evm_setAutomine', [true]);
    await anvil.rpc('anvil_mine', ['0x80']);
    expect(await world.ledger.finalizedNonce()).toBeGreaterThan(
      (await rpc.getTransaction({ hash: stored[1]! })).nonce,
    );

    // Re-sending the latest answers "nonce too low", the nonce is finalized, neither the first nor
    // the latest has a receipt: still not proof, the middle one has. Retried, never final.
    const resend = await failureOf(world.activities.sendTreasuryTransfer(req));
    expect(resend.nonRetryable).toBe(false);
    await expect(world.activities.confirmTreasuryTransfer(req)).resolves.toMatchObject({
      status: 'confirmed',
    });
    expect(await minedHash(req.payoutId)).toBe(stored[1]);
    expect((await anvil.transfersTo(receiver)).count).toBe(1);
  });

  async function rawOf(payoutId: string): Promise<Hex[]> {
    const { rows } = await db.query<{ raw_transaction: Hex }>(
      'SELECT raw_transaction FROM treasury_transfer_attempts WHERE payout_id = $1 ORDER BY attempt',
      [payoutId],
    );
    return rows.map((r) => r.raw_transaction);
  }
});

function parseTx(raw: Hex): { nonce: number; maxFee: bigint; tip: bigint } {
  const tx = parseTransaction(raw);
  return { nonce: tx.nonce!, maxFee: tx.maxFeePerGas!, tip: tx.maxPriorityFeePerGas! };
}

describe("a treasury payout's rounds closed before it fails", () => {
  it('refuse every later signing for it, even by an attempt still running elsewhere; a signed transfer keeps them open', async () => {
    const world = await treasuryWorld(10_000_000n);
    const to = privateKeyToAddress(generatePrivateKey());
    const failing = { payoutId: randomUUID(), to, amountUnits: '1000000' };
    // Nothing signed: closed, and an attempt that signs now (a worker that lost its lease) is refused.
    await expect(world.activities.closeTreasuryRounds({ payoutId: failing.payoutId })).resolves.toBe(
      'closed',
    );
    await expect(world.activities.closeTreasuryRounds({ payoutId: failing.payoutId })).resolves.toBe(
      'closed',
    );
    const late = await failureOf(world.activities.sendTreasuryTransfer(failing));
    expect({ type: late.type, nonRetryable: late.nonRetryable }).toEqual({
      type: 'TreasuryClosed',
      nonRetryable: true,
    });
    const { rowCount } = await db.query('SELECT 1 FROM treasury_transfers WHERE payout_id = $1', [
      failing.payoutId,
    ]);
    expect(rowCount).toBe(0);

    // Signed: it may still land, so the payout may not fail; its re-send goes on.
    const signed = { payoutId: randomUUID(), to, amountUnits: '1000000' };
    const { txHash } = (await world.activities.sendTreasuryTransfer(signed)) as { txHash: Hex };
    await expect(world.activities.closeTreasuryRounds({ payoutId: signed.payoutId })).resolves.toBe('signed');
    await expect(world.activities.sendTreasuryTransfer(signed)).resolves.toEqual({ txHash });
    // A newer round signed after an older one's death was read (an attempt still running elsewhere):
    // proof of the older one's death leaves it open.
    expect(await closeTreasuryRound(db, signed.payoutId, 0, txHash)).toBe(true);
    const newer = (await world.activities.sendTreasuryTransfer(signed)) as { txHash: Hex };
    expect(newer.txHash).not.toBe(txHash);
    await expect(
      world.activities.closeTreasuryRounds({ payoutId: signed.payoutId, deadRound: 0 }),
    ).resolves.toBe('signed');
    await expect(world.activities.sendTreasuryTransfer(signed)).resolves.toEqual(newer);
    // Its own transaction proven unable to land (reverted at finality, its nonce taken): closed, so no
    // round is signed after it.
    await expect(
      world.activities.closeTreasuryRounds({ payoutId: signed.payoutId, deadRound: 1 }),
    ).resolves.toBe('closed');
    expect(await closeTreasuryRound(db, signed.payoutId, 1, newer.txHash)).toBe(true);
    expect((await failureOf(world.activities.sendTreasuryTransfer(signed))).type).toBe('TreasuryClosed');
  });
});
