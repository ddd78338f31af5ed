import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import {
  createPublicClient,
  createWalletClient,
  http,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress } from 'viem/accounts';
import { createActivities } from '../../src/activities';
import { USDT_ABI } from '../../src/adapters/chain/usdt-abi';
import { createUsdtLedger } from '../../src/adapters/chain/usdt-ledger';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { getOrCreateTreasuryTransfer } from '../../src/adapters/db/treasury-transfers-repo';
import { createHttpProvider } from '../../src/adapters/provider/http-provider';
import { createLogger } from '../../src/observability/logger';
import { createMetrics, type Metrics } from '../../src/observability/metrics';
import { deployTestUsdt } from '../../dev/local/deploy-test-usdt';
import { anvilAccount, startAnvil, type AnvilHandle } from '../../dev/local/infra/anvil';
import { freePort } from '../../dev/local/infra/ports';
import { testDatabaseUrl } from '../support/env';

// The settlement activities against a real chain (anvil, chain id 42161) and the real PostgreSQL:
// one on-chain transfer settles at most one payout; an empty treasury waits instead of failing; a
// nonce conflict is final only once proven.
const CHAIN_ID = 42161;
const deployer = anvilAccount('deployer');
const providerWallet = anvilAccount('provider-sandbox');

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

const anvilRpc = (method: string, params: unknown[] = []) =>
  rpc.request({ method, params } as never) as Promise<unknown>;

async function send(key: Hex, fn: 'transfer', to: Address, units: bigint): Promise<Hex> {
  const wallet = createWalletClient({ account: privateKeyToAccount(key), transport: http(anvil.rpcUrl) });
  const hash = await wallet.writeContract({
    address: usdt,
    abi: USDT_ABI,
    functionName: fn,
    args: [to, units],
    chain: null,
  } as never);
  await rpc.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  return hash;
}

/** A treasury of its own (ETH for gas, optionally USDT), and the activities bound to it. */
async function treasuryWorld(usdtUnits: bigint) {
  const key = generatePrivateKey();
  const address = privateKeyToAddress(key);
  await anvilRpc('anvil_setBalance', [address, '0x56BC75E2D63100000']);
  if (usdtUnits > 0n) await send(providerWallet.privateKey, 'transfer', address, usdtUnits);
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
  });
  return { key, address, ledger, metrics, activities };
}

const counter = async (metrics: Metrics, name: keyof Metrics) =>
  (await (metrics[name] as { get(): Promise<{ values: { value: number }[] }> }).get()).values.reduce(
    (sum, v) => sum + v.value,
    0,
  );

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

it('claims a confirmed transfer for one payout; the same transfer reported for another is a mismatch', async () => {
  const { activities, metrics } = await treasuryWorld(0n);
  const receiver = privateKeyToAddress(generatePrivateKey());
  const txHash = await send(providerWallet.privateKey, 'transfer', receiver, 5_000_000n);
  const check = { txHash, to: receiver, amountUnits: '5000000', minConfirmations: 1 };
  const [first, second] = [randomUUID(), randomUUID()];

  await expect(activities.verifyUsdtTransfer({ ...check, payoutId: first })).resolves.toBe('confirmed');
  // An activity retry for the same payout is the same claim.
  await expect(activities.verifyUsdtTransfer({ ...check, payoutId: first })).resolves.toBe('confirmed');
  await expect(activities.verifyUsdtTransfer({ ...check, payoutId: second })).resolves.toBe('mismatch');

  const { rows } = await db.query(
    'SELECT payout_id, chain_id, log_index FROM settlement_transfer_claims WHERE tx_hash = $1',
    [txHash.toLowerCase()],
  );
  expect(rows).toEqual([{ payout_id: first, chain_id: CHAIN_ID, log_index: 0 }]);
  expect(await counter(metrics, 'transferClaimConflicts')).toBe(1);
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

  await send(providerWallet.privateKey, 'transfer', world.address, 3_000_000n);
  const { txHash } = await world.activities.sendTreasuryTransfer(req);
  await rpc.waitForTransactionReceipt({ hash: txHash, pollingInterval: 50 });
  await expect(world.activities.confirmTreasuryTransfer({ ...req, minConfirmations: 1 })).resolves.toBe(
    'confirmed',
  );
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

  await anvilRpc('anvil_mine', ['0x80']);
  expect(await world.ledger.finalizedNonce()).toBeGreaterThan(nonce);
  const proven = await failureOf(world.activities.sendTreasuryTransfer(req));
  expect({ type: proven.type, nonRetryable: proven.nonRetryable }).toEqual({
    type: 'ChainRejected',
    nonRetryable: true,
  });
});
