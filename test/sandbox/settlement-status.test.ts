/**
 * The settlement status contract end to end: the sandbox's GET /settlements/{id}, the client and the
 * provider activities over loopback, real USDT transfers on anvil, a real webhook receiver, and
 * sandbox restarts with and without SANDBOX_STATE_FILE. Faults are injected through the sandbox's own
 * control endpoint (POST /sandbox/faults) and by turning anvil's automine off; nothing is mocked.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { ApplicationFailure } from '@temporalio/common';
import type { FastifyInstance } from 'fastify';
import { createPublicClient, erc20Abi, http, parseEventLogs, type Address, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';

import { createProviderActivities } from '../../src/activities/provider.activities';
import { createScreeningActivities } from '../../src/activities/screening.activities';
import { findSettlementRequestSent } from '../../src/adapters/db/settlement-requests-repo';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { createHttpProvider } from '../../src/adapters/provider/http-provider';
import { ProviderError, type PaymentProvider } from '../../src/adapters/provider/types';
import type { ProviderEvent } from '../../src/domain/provider-event';
import { createLogger } from '../../src/observability/logger';
import { ANVIL_DEV_ACCOUNTS } from '../../dev/local/infra/anvil';
import { startTestChain, type TestChain } from '../support/chain';
import { testDatabaseUrl } from '../support/env';
import { until } from '../support/until';
import { buildSandboxApp } from '../../dev/sandbox/app';
import { loadSandboxConfig, type SandboxConfig } from '../../dev/sandbox/config';
import { startWebhookReceiver, type WebhookReceiver } from './support';

const API_KEY = 'settlement-status-key-0123';
const sandboxWallet = ANVIL_DEV_ACCOUNTS[1];

let anvil: TestChain;
let chain: PublicClient;
let usdt: Address;
let receiver: WebhookReceiver;
let stateDir: string;
/** Where the settlement requests sent are recorded (settlement-requests-repo). */
let db: Db;

beforeAll(async () => {
  db = createPool(testDatabaseUrl(), 1);
  anvil = await startTestChain({
    funded: [{ wallet: sandboxWallet.address, usdtUnits: 1_000_000n * 10n ** 6n }],
  });
  chain = createPublicClient({ transport: http(anvil.rpcUrl) });
  usdt = anvil.usdtAddress;
  receiver = await startWebhookReceiver();
  stateDir = mkdtempSync(path.join(tmpdir(), 'sandbox-state-'));
}, 60_000);

afterAll(async () => {
  await anvilRpc('evm_setAutomine', [true]).catch(() => {});
  await receiver?.close();
  await anvil?.stop();
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  await db?.end();
});

afterEach(async () => {
  // A test that failed with automine off must not hold the next one's transfers.
  await anvilRpc('evm_setAutomine', [true]);
});

const anvilRpc = (method: string, params: unknown[] = []) => anvil.rpc(method, params);

type ProviderActivities = ReturnType<typeof createProviderActivities>;
type RequestArgs = Parameters<ProviderActivities['requestSettlement']>[0];
/** Every receiver in this file is clear: a request answers the provider's settlement, never a flag. */
type ClearReceiverActivities = Omit<ProviderActivities, 'requestSettlement'> & {
  requestSettlement(
    req: RequestArgs,
  ): Promise<Exclude<Awaited<ReturnType<ProviderActivities['requestSettlement']>>, { flagged: unknown }>>;
};

interface Sandbox {
  app: FastifyInstance;
  url: string;
  provider: PaymentProvider;
  activities: ClearReceiverActivities;
  close(): Promise<void>;
}

/** A sandbox on loopback, with the service's client and provider activities pointed at it. */
async function startSandbox(env: Record<string, string> = {}): Promise<Sandbox> {
  const config: SandboxConfig = loadSandboxConfig({
    SANDBOX_PORT: '0',
    SANDBOX_WEBHOOK_URL: receiver.url,
    SANDBOX_API_KEY: API_KEY,
    SANDBOX_EVM_RPC_URL: anvil.rpcUrl,
    SANDBOX_USDT_ADDRESS: usdt,
    SANDBOX_WALLET_PRIVATE_KEY: sandboxWallet.privateKey,
    SANDBOX_LOG_LEVEL: 'silent',
    ...env,
  });
  const app = buildSandboxApp(config);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (typeof address !== 'object' || !address) throw new Error('sandbox has no address');
  const url = `http://127.0.0.1:${address.port}`;
  const provider = createHttpProvider({ baseUrl: url, apiKey: API_KEY, timeoutMs: 5_000 });
  const all = createProviderActivities({
    db,
    provider,
    settlementProvider: provider,
    // Screening is not what this file tests.
    screening: { screen: async () => ({ kind: 'clear' as const }) },
    logger: createLogger({ level: 'silent', name: 'test' }),
  });
  const activities: ClearReceiverActivities = {
    ...all,
    async requestSettlement(req) {
      const answer = await all.requestSettlement(req);
      if ('flagged' in answer) throw new Error('a clear receiver was flagged');
      return answer;
    },
  };
  return { app, url, provider, activities, close: () => app.close() };
}

let seq = 0;
function newPayoutId(): string {
  seq += 1;
  return `10000000-0000-4000-8000-${String(seq).padStart(12, '0')}`;
}

function freshWallet(): Address {
  return privateKeyToAccount(generatePrivateKey()).address;
}

/** A paid charge ready for settlement. */
async function paidCharge(sandbox: Sandbox, outcome: 'settled' | 'settlement_failed' = 'settled') {
  const payoutId = newPayoutId();
  const charge = await sandbox.activities.createPixCharge({
    payoutId,
    amountCentavos: '10000',
    pixKey: '12345678901',
    pixKeyType: 'CPF',
    expiresInSeconds: 3600,
  });
  const paid = await post(sandbox, '/sandbox/payments', { pix_copy_paste: charge.pixCopyPaste, outcome });
  expect(paid.status).toBe(202);
  // The pix.received webhook: taken so the settlement's is the next one.
  await receiver.takeToken();
  return { payoutId, ...charge };
}

async function post(sandbox: Sandbox, route: string, body: unknown, method = 'POST') {
  const res = await fetch(`${sandbox.url}${route}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function getSettlement(sandbox: Sandbox, settlementId: string) {
  const res = await fetch(`${sandbox.url}/settlements/${settlementId}`, {
    headers: { authorization: `Bearer ${API_KEY}` },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function fault(sandbox: Sandbox, route: string, status: number, count: number) {
  expect((await post(sandbox, '/sandbox/faults', { route, status, count })).status).toBe(201);
}

/** Polls the settlement until `done` holds for its status body. */
async function settlementWhen(
  sandbox: Sandbox,
  settlementId: string,
  done: (body: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  return until(`settlement ${settlementId} in the expected state`, async () => {
    const { status, body } = await getSettlement(sandbox, settlementId);
    return status === 200 && done(body) ? body : undefined;
  });
}

async function nextEvent(provider: PaymentProvider): Promise<ProviderEvent> {
  return provider.fetchNotification(await receiver.takeToken());
}

/** The ApplicationFailure an activity threw: its type and whether Temporal may retry it. */
async function failure(
  promise: Promise<unknown>,
): Promise<{ type: string | undefined; nonRetryable: boolean }> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ApplicationFailure))
    throw new Error(`expected an ApplicationFailure, got ${String(err)}`);
  return { type: err.type ?? undefined, nonRetryable: err.nonRetryable === true };
}

async function transfersTo(wallet: Address) {
  const logs = await chain.getLogs({
    address: usdt,
    event: erc20Abi.find((e) => e.type === 'event' && e.name === 'Transfer')!,
    args: { to: wallet },
    fromBlock: 0n,
  });
  return parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs });
}

describe('one sandbox', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await startSandbox();
  });
  afterAll(() => sandbox?.close());

  test('createPixCharge returns the provider expiry with the charge', async () => {
    const payoutId = newPayoutId();
    const charge = await sandbox.activities.createPixCharge({
      payoutId,
      amountCentavos: '5000',
      pixKey: '12345678901',
      pixKeyType: 'CPF',
      expiresInSeconds: 600,
    });
    const status = await sandbox.provider.getChargeStatus(charge.chargeId);
    expect(charge.expiresAt).toBe(status.expiresAt);
  });

  test('pending, broadcast (held in the pool), completed: each visible, tx hash known from broadcast on', async () => {
    const { payoutId, chargeId } = await paidCharge(sandbox);
    const wallet = freshWallet();
    await anvilRpc('evm_setAutomine', [false]);
    const request = { payoutId, chargeId, receiverWallet: wallet, chainId: 42161 };
    const first = await sandbox.activities.requestSettlement(request);
    expect(first).toEqual({ settlementId: expect.stringMatching(/^stl_/), status: 'pending' });

    const broadcast = await settlementWhen(sandbox, first.settlementId, (b) => b.status === 'broadcast');
    expect(broadcast).toEqual({
      settlement_id: first.settlementId,
      external_id: payoutId,
      charge_id: chargeId,
      receiver_wallet: wallet,
      chain_id: 42161,
      status: 'broadcast',
      tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      amount_usdt: '17.825311',
      failure_reason: null,
      updated_at: expect.any(String),
    });
    const txHash = broadcast.tx_hash as `0x${string}`;
    // The transaction really is in the node's pool, under the hash the sandbox reports.
    expect(await chain.getTransaction({ hash: txHash })).toMatchObject({ hash: txHash, blockNumber: null });
    // A repeated request answers the current status and the transaction; it sends nothing more.
    expect(await sandbox.activities.requestSettlement(request)).toEqual({
      settlementId: first.settlementId,
      status: 'broadcast',
      txHash,
    });
    expect(
      await sandbox.activities.fetchSettlementStatus({ payoutId, settlementId: first.settlementId }),
    ).toEqual({
      status: 'broadcast',
      txHash,
      amountUsdt: '17.825311',
      chainId: 42161,
    });

    await anvilRpc('evm_setAutomine', [true]);
    await anvilRpc('evm_mine');
    const event = await nextEvent(sandbox.provider);
    expect(event).toMatchObject({ type: 'settlement.completed', txHash, amountUsdt: '17.825311' });
    expect(
      await sandbox.activities.fetchSettlementStatus({ payoutId, settlementId: first.settlementId }),
    ).toEqual({
      status: 'completed',
      txHash,
      amountUsdt: '17.825311',
      chainId: 42161,
    });
    expect((await chain.getTransactionReceipt({ hash: txHash })).status).toBe('success');
    expect((await transfersTo(wallet)).map((t) => t.transactionHash)).toEqual([txHash]);
  });

  test('a settlement refused before anything was sent is failed without tx hash: the proof', async () => {
    const { payoutId, chargeId } = await paidCharge(sandbox, 'settlement_failed');
    const wallet = freshWallet();
    const { settlementId } = await sandbox.activities.requestSettlement({
      payoutId,
      chargeId,
      receiverWallet: wallet,
      chainId: 42161,
    });
    expect(await nextEvent(sandbox.provider)).toMatchObject({ type: 'settlement.failed' });
    expect((await getSettlement(sandbox, settlementId)).body).toMatchObject({
      status: 'failed',
      tx_hash: null,
      amount_usdt: null,
      failure_reason: 'simulated settlement failure',
    });
    expect(await sandbox.activities.fetchSettlementStatus({ payoutId, settlementId })).toEqual({
      status: 'failed',
      chainId: 42161,
      failureReason: 'simulated settlement failure',
    });
    expect(await transfersTo(wallet)).toEqual([]);
  });

  test('an unknown settlement is 404 unknown_settlement to the client and `unknown` to the activity', async () => {
    expect(await getSettlement(sandbox, 'stl_nope')).toEqual({
      status: 404,
      body: { error: 'unknown settlement' },
    });
    await expect(sandbox.provider.getSettlementStatus('stl_nope')).rejects.toMatchObject({
      code: 'unknown_settlement',
    });
    expect(
      await sandbox.activities.fetchSettlementStatus({ payoutId: newPayoutId(), settlementId: 'stl_nope' }),
    ).toEqual({ status: 'unknown' });
  });

  test('a settlement status for another payout is refused, finally', async () => {
    const { payoutId, chargeId } = await paidCharge(sandbox, 'settlement_failed');
    const { settlementId } = await sandbox.activities.requestSettlement({
      payoutId,
      chargeId,
      receiverWallet: freshWallet(),
      chainId: 42161,
    });
    await receiver.takeToken();
    expect(
      await failure(sandbox.activities.fetchSettlementStatus({ payoutId: newPayoutId(), settlementId })),
    ).toEqual({ type: 'ProviderRejected', nonRetryable: true });
  });

  test('status answers 503 or 401 for a while: ProviderUnavailable, retryable, then the answer', async () => {
    const { payoutId, chargeId } = await paidCharge(sandbox, 'settlement_failed');
    const { settlementId } = await sandbox.activities.requestSettlement({
      payoutId,
      chargeId,
      receiverWallet: freshWallet(),
      chainId: 42161,
    });
    await receiver.takeToken();
    await fault(sandbox, 'GET /settlements/{settlement_id}', 503, 1);
    const read = () => sandbox.activities.fetchSettlementStatus({ payoutId, settlementId });
    expect(await failure(read())).toEqual({ type: 'ProviderUnavailable', nonRetryable: false });
    await fault(sandbox, 'GET /settlements/{settlement_id}', 401, 1);
    expect(await failure(read())).toEqual({ type: 'ProviderUnavailable', nonRetryable: false });
    expect(await read()).toMatchObject({ status: 'failed' });
  });

  test('a charge status that cannot be read is never unpaid: ChargeStatusUnreadable, retryable', async () => {
    const payoutId = newPayoutId();
    const { chargeId } = await sandbox.activities.createPixCharge({
      payoutId,
      amountCentavos: '5000',
      pixKey: '12345678901',
      pixKeyType: 'CPF',
      expiresInSeconds: 600,
    });
    const read = (id = chargeId, payout = payoutId) =>
      sandbox.activities.fetchChargeStatus({ payoutId: payout, chargeId: id });
    const unreadable = { type: 'ChargeStatusUnreadable', nonRetryable: false };
    for (const status of [401, 403, 500, 503]) {
      await fault(sandbox, 'GET /pix/charges/{charge_id}', status, 1);
      expect({ status, failure: await failure(read()) }).toEqual({ status, failure: unreadable });
    }
    // A 404 for a charge we created (a provider that lost it) and an answer naming another payout.
    expect(await failure(read('chg_forgotten'))).toEqual(unreadable);
    expect(await failure(read(chargeId, newPayoutId()))).toEqual(unreadable);
    // Once the provider answers, the charge is what it says.
    expect(await read()).toMatchObject({ status: 'active', payments: [] });
  });

  test('settlement request errors: only a 400 is a refusal', async () => {
    const payoutId = newPayoutId();
    const { chargeId, pixCopyPaste } = await sandbox.activities.createPixCharge({
      payoutId,
      amountCentavos: '10000',
      pixKey: '12345678901',
      pixKeyType: 'CPF',
      expiresInSeconds: 600,
    });
    const wallet = freshWallet();
    const request = { payoutId, chargeId, receiverWallet: wallet, chainId: 42161 };

    // Not paid yet, as far as this provider knows: its own code, retryable for the workflow to bound.
    expect(
      await post(sandbox, '/settlements', {
        external_id: payoutId,
        charge_id: chargeId,
        receiver_wallet: wallet,
        chain_id: 42161,
      }),
    ).toEqual({
      status: 409,
      body: { error: 'charge not paid', code: 'charge_not_paid' },
    });
    await expect(
      sandbox.provider.requestSettlement({ ...request, externalId: payoutId }),
    ).rejects.toMatchObject({
      code: 'charge_not_paid',
    });
    expect(await failure(sandbox.activities.requestSettlement(request))).toEqual({
      type: 'ChargeNotPaidYet',
      nonRetryable: false,
    });
    // An unknown charge (404), a provider error or a rejected key prove nothing either.
    expect(await failure(sandbox.activities.requestSettlement({ ...request, chargeId: 'chg_nope' }))).toEqual(
      {
        type: 'ProviderUnavailable',
        nonRetryable: false,
      },
    );
    for (const status of [401, 503]) {
      await fault(sandbox, 'POST /settlements', status, 1);
      expect(await failure(sandbox.activities.requestSettlement(request))).toEqual({
        type: 'ProviderUnavailable',
        nonRetryable: false,
      });
    }
    // A request the provider refuses as such: wrong chain (400).
    expect(await failure(sandbox.activities.requestSettlement({ ...request, chainId: 1 }))).toEqual({
      type: 'ProviderRejected',
      nonRetryable: true,
    });

    await post(sandbox, '/sandbox/payments', { pix_copy_paste: pixCopyPaste, outcome: 'settlement_failed' });
    await receiver.takeToken();
    const accepted = await sandbox.activities.requestSettlement(request);
    await receiver.takeToken();
    // The same payout id with another wallet: a conflict. Not a refusal: a settlement exists for the
    // payout and may move USDT, so it is retried (and alerted) until an operator decides.
    expect(
      await failure(sandbox.activities.requestSettlement({ ...request, receiverWallet: freshWallet() })),
    ).toEqual({
      type: 'SettlementConflict',
      nonRetryable: false,
    });
    expect(await sandbox.activities.requestSettlement(request)).toEqual({
      settlementId: accepted.settlementId,
      status: 'failed',
    });
  });

  test('faults: validated, counted down, listed and cleared', async () => {
    expect(
      (await post(sandbox, '/sandbox/faults', { route: 'GET /nowhere', status: 503, count: 1 })).status,
    ).toBe(400);
    expect(
      (await post(sandbox, '/sandbox/faults', { route: 'GET /fx/quote', status: 200, count: 1 })).status,
    ).toBe(400);
    await fault(sandbox, 'GET /fx/quote', 503, 2);
    expect((await fetch(`${sandbox.url}/sandbox/faults`).then((r) => r.json())) as unknown).toEqual({
      faults: [{ route: 'GET /fx/quote', status: 503, remaining: 2 }],
    });
    await expect(sandbox.provider.getQuote()).rejects.toMatchObject({
      code: 'server_error',
      httpStatus: 503,
    });
    const cleared = await fetch(`${sandbox.url}/sandbox/faults`, { method: 'DELETE' });
    expect(await cleared.json()).toEqual({ cleared: 1 });
    expect((await sandbox.provider.getQuote()).rate).toBe('5.50');
  });

  test('a request sent is on record, with its id once answered, for a run a reset left knowing nothing of it', async () => {
    const screening = createScreeningActivities({
      db,
      screening: { screen: async () => ({ kind: 'clear' as const }) },
      logger: createLogger({ level: 'silent', name: 'test' }),
    });
    const { payoutId, chargeId } = await paidCharge(sandbox);
    const wallet = freshWallet();
    const asked = { payoutId, wallet, unlessRequested: true };
    expect(await screening.screenReceiver(asked)).toEqual({ kind: 'clear' });
    const { settlementId } = await sandbox.activities.requestSettlement({
      payoutId,
      chargeId,
      receiverWallet: wallet,
      chainId: 42161,
    });
    expect(await findSettlementRequestSent(db, payoutId)).toEqual({
      firstSentAt: expect.any(String),
      settlementId,
    });
    // Its webhook taken, so that the next test's events are its own.
    expect(await nextEvent(sandbox.provider)).toMatchObject({
      type: 'settlement.completed',
      externalId: payoutId,
    });
    expect(await screening.screenReceiver(asked)).toEqual({ kind: 'requested_before', settlementId });
    // Screening again before a request is sent again asks for a verdict only.
    expect(await screening.screenReceiver({ payoutId, wallet })).toEqual({ kind: 'clear' });
    // Refused, the request still left: on record, with no id.
    const refused = randomUUID();
    await failure(
      sandbox.activities.requestSettlement({
        payoutId: refused,
        chargeId: 'chg_nope',
        receiverWallet: wallet,
        chainId: 42161,
      }),
    );
    expect(await screening.screenReceiver({ ...asked, payoutId: refused })).toEqual({
      kind: 'requested_before',
    });
  });
});

describe('sandbox restarts', () => {
  test('with SANDBOX_STATE_FILE a broadcast settlement survives, resumes its wait and notifies once', async () => {
    const stateFile = path.join(stateDir, 'state.json');
    const first = await startSandbox({ SANDBOX_STATE_FILE: stateFile });
    const { payoutId, chargeId } = await paidCharge(first);
    const wallet = freshWallet();
    await anvilRpc('evm_setAutomine', [false]);
    const request = { payoutId, chargeId, receiverWallet: wallet, chainId: 42161 };
    const { settlementId } = await first.activities.requestSettlement(request);
    const broadcast = await settlementWhen(first, settlementId, (b) => b.status === 'broadcast');
    await first.close();

    const second = await startSandbox({ SANDBOX_STATE_FILE: stateFile });
    try {
      // It still knows the settlement, the transaction it sent and the charge.
      expect((await getSettlement(second, settlementId)).body).toEqual(broadcast);
      expect(await second.activities.requestSettlement(request)).toEqual({
        settlementId,
        status: 'broadcast',
        txHash: broadcast.tx_hash,
      });
      expect(await second.provider.getChargeStatus(chargeId)).toMatchObject({ status: 'paid' });

      await anvilRpc('evm_setAutomine', [true]);
      await anvilRpc('evm_mine');
      const event = await nextEvent(second.provider);
      expect(event).toMatchObject({
        type: 'settlement.completed',
        txHash: broadcast.tx_hash,
        externalId: payoutId,
      });
      expect(await second.activities.fetchSettlementStatus({ payoutId, settlementId })).toMatchObject({
        status: 'completed',
        txHash: broadcast.tx_hash,
      });
      // One transfer, the one sent before the restart.
      expect((await transfersTo(wallet)).map((t) => t.transactionHash)).toEqual([broadcast.tx_hash]);
    } finally {
      await second.close();
    }
  });

  test('without it, a restarted sandbox says it does not know the settlement', async () => {
    const first = await startSandbox();
    const { payoutId, chargeId } = await paidCharge(first, 'settlement_failed');
    const { settlementId } = await first.activities.requestSettlement({
      payoutId,
      chargeId,
      receiverWallet: freshWallet(),
      chainId: 42161,
    });
    await receiver.takeToken();
    await first.close();
    const second = await startSandbox();
    try {
      expect(await second.activities.fetchSettlementStatus({ payoutId, settlementId })).toEqual({
        status: 'unknown',
      });
      await expect(second.provider.getSettlementStatus(settlementId)).rejects.toBeInstanceOf(ProviderError);
    } finally {
      await second.close();
    }
  });
});
