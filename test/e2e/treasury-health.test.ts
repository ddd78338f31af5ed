import { createWalletClient, http, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { createTreasuryHealthProbe } from '../../src/adapters/chain/treasury-health';
import type { PayoutResponse } from '../../src/domain/payout';
import { payoutWorkflowId } from '../../src/workflows/payout.contract';
import { anvilAccount } from '../../dev/local/infra/anvil';
import { post } from '../support/http';
import { useStack, VALID_PAYOUT } from '../support/stack';
import { until } from '../support/until';

// A treasury the token's issuer blocks, black-box on real servers (Temporal dev server, PostgreSQL,
// anvil with the test USDT and its blocklist, the sandbox, the api and a worker): paid payouts wait
// in PROCESSING, never FAILED and never a refund case, and complete by themselves once the block is
// lifted, the receiver paid exactly once. The settlement deadline is the smallest config allows (60 s)
// so the waiting payout's attention item shows within the test. Every wait is on an observable event.

const SETTLEMENT_TIMEOUT_SECONDS = 60;

/** The test token's issuer blocklist, kept by its owner: the deployer account of the local chain. */
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

/** Waits on an observable event, polling every 250 ms. */
const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number) =>
  until(what, probe, { timeoutMs, intervalMs: 250 });

describe('a treasury blocked by the token issuer (real servers, treasury mode)', () => {
  const stack = useStack({
    env: { SETTLEMENT_MODE: 'treasury', SETTLEMENT_TIMEOUT_SECONDS: String(SETTLEMENT_TIMEOUT_SECONDS) },
  });
  let apiKey: string;

  beforeAll(async () => {
    ({ apiKey } = await stack.createPartner());
  });

  /** The issuer blocks or lifts the block; with a high tip, it runs first in a block it shares. */
  async function setBlocked(blocked: boolean): Promise<Hex> {
    const issuer = createWalletClient({
      account: privateKeyToAccount(anvilAccount('deployer').privateKey),
      transport: http(stack.rpcUrl),
    });
    return issuer.writeContract({
      address: stack.usdtAddress,
      abi: BLOCKLIST_ABI,
      functionName: blocked ? 'addToBlockedList' : 'removeFromBlockedList',
      args: [stack.treasury.address],
      chain: null,
      maxPriorityFeePerGas: 100_000_000_000n,
      maxFeePerGas: 1_000_000_000_000n,
    });
  }
  const receipt = (hash: Hex) =>
    waitFor(
      `the receipt of ${hash}`,
      async () =>
        (await stack.chain.rpc<{ status: string } | null>('eth_getTransactionReceipt', [hash])) ?? undefined,
      30_000,
    );

  /** A payout created while the treasury can send; `beforePayment` runs between its POST and its payment. */
  async function paidPayout(
    beforePayment: () => Promise<unknown> = async () => {},
  ): Promise<{ payout: PayoutResponse; receiver: Address }> {
    const { payout, receiver } = await stack.createPayout(apiKey);
    await beforePayment();
    await stack.pay(payout.pix_copy_paste);
    return { payout, receiver };
  }

  /** The partner's view; throws if the payout left PROCESSING for anything but COMPLETED. */
  async function processing(id: string): Promise<void> {
    const res = await fetch(`${stack.apiUrl}/v1/payouts/${id}`, { headers: { 'x-api-key': apiKey } });
    const body = (await res.json()) as PayoutResponse;
    if (body.status !== 'PROCESSING')
      throw new Error(`payout ${id} left PROCESSING: ${JSON.stringify(body)}`);
  }

  const refundCases = async (id: string) =>
    (await stack.db.query('SELECT 1 FROM refund_cases WHERE payout_id = $1', [id])).rowCount;
  const rounds = async (id: string) =>
    (
      await stack.db.query<{ round: number; tx_hash: Hex; reverted: boolean }>(
        `SELECT round, tx_hash, reverted_at IS NOT NULL AS reverted FROM treasury_transfers
          WHERE payout_id = $1 ORDER BY round`,
        [id],
      )
    ).rows;
  const cannotSendCount = async () =>
    (await stack.metrics.treasuryCannotSend.get()).values.find((v) => v.labels.reason === 'blocked_by_issuer')
      ?.value ?? 0;

  /** What the payout's pending treasury activity last failed with, once it has failed. */
  async function lastFailureType(id: string, activity: string): Promise<string | undefined> {
    const { raw } = await stack.temporal.workflow.getHandle(payoutWorkflowId(id)).describe();
    const pending = (raw.pendingActivities ?? []).find((a) => a.activityType?.name === activity);
    return pending?.lastFailure?.applicationFailureInfo?.type ?? undefined;
  }

  it('blocked before signing: the paid payout waits with an attention item and completes once unblocked', async () => {
    const probe = createTreasuryHealthProbe({
      rpcUrl: stack.rpcUrl,
      chainId: 42161,
      usdtAddress: stack.usdtAddress,
      treasuryAddress: stack.treasury.address,
      cacheMs: 0,
    });
    const { payout, receiver } = await paidPayout(async () => {
      await receipt(await setBlocked(true));
      await expect(probe.treasuryCanSend()).resolves.toMatchObject({
        ok: false,
        reason: 'blocked_by_issuer',
      });
      // Meanwhile no payer pays into a payout that cannot settle: POST answers 503, creating nothing.
      const refused = await post(stack.apiUrl, apiKey, VALID_PAYOUT);
      expect(refused.status).toBe(503);
      expect(refused.json).toEqual({
        error: 'payouts are paused: the treasury cannot send USDT, retry later',
      });
    });

    // The send is refused for the treasury's sake, counted (the alert), and retried: nothing signed.
    await waitFor(
      'the send refused with TreasuryCannotSend',
      async () => {
        await processing(payout.id).catch(() => undefined);
        return (await lastFailureType(payout.id, 'sendTreasuryTransfer')) === 'TreasuryCannotSend'
          ? true
          : undefined;
      },
      60_000,
    );
    expect(await cannotSendCount()).toBeGreaterThan(0);
    expect(await rounds(payout.id)).toEqual([]);

    // Past the settlement deadline: still PROCESSING, with an attention item naming the payout.
    await waitFor(
      'settlement_overdue raised',
      async () => {
        await processing(payout.id);
        const { rows } = await stack.db.query(
          `SELECT 1 FROM payout_attention
            WHERE payout_id = $1 AND kind = 'settlement_overdue' AND cleared_at IS NULL`,
          [payout.id],
        );
        return rows[0];
      },
      SETTLEMENT_TIMEOUT_SECONDS * 1000 + 60_000,
    );
    expect(await refundCases(payout.id)).toBe(0);

    await receipt(await setBlocked(false));
    await expect(probe.treasuryCanSend()).resolves.toEqual({ ok: true });
    expect((await post(stack.apiUrl, apiKey, VALID_PAYOUT)).status).toBe(201);
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED'], 180_000);
    expect(done).toMatchObject({ status: 'COMPLETED', settled_amount_usdt: 16.979434 });
    expect(await stack.chain.transfersTo(receiver)).toEqual({
      count: 1,
      total: 16_979_434n,
      txHashes: [done.blockchain_tx_id],
    });
    expect(await refundCases(payout.id)).toBe(0);
  }, 360_000);

  it('blocked between signing and mining: the reverted round is followed by a new one once unblocked, paid once', async () => {
    await stack.chain.setAutomine(false);
    const { payout, receiver } = await paidPayout();
    const [signed] = await waitFor(
      'the treasury transfer signed and in the pool',
      async () => {
        const found = await rounds(payout.id);
        if (found.length === 0) return undefined;
        const tx = await stack.chain.rpc<object | null>('eth_getTransactionByHash', [found[0]!.tx_hash]);
        return tx ? found : undefined;
      },
      60_000,
    );
    // The block and our transfer in one block, the block first.
    const block = await setBlocked(true);
    await stack.chain.mine();
    await stack.chain.setAutomine(true);
    expect((await receipt(block)).status).toBe('0x1');
    expect((await receipt(signed!.tx_hash)).status).toBe('0x0');
    // The round closes only once the revert is final: anvil finalizes 64 blocks back.
    await stack.chain.mine(65);

    // The revert is the treasury's: the round is closed, the payout waits to send again.
    await waitFor(
      'the round closed and the new send refused',
      async () => {
        await processing(payout.id);
        const closed = (await rounds(payout.id))[0]?.reverted;
        return closed && (await lastFailureType(payout.id, 'sendTreasuryTransfer')) === 'TreasuryCannotSend'
          ? true
          : undefined;
      },
      60_000,
    );
    expect(await rounds(payout.id)).toEqual([{ round: 0, tx_hash: signed!.tx_hash, reverted: true }]);
    expect(await refundCases(payout.id)).toBe(0);

    await receipt(await setBlocked(false));
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED'], 180_000);
    expect(done.status).toBe('COMPLETED');
    const after = await rounds(payout.id);
    expect(after).toEqual([
      { round: 0, tx_hash: signed!.tx_hash, reverted: true },
      { round: 1, tx_hash: done.blockchain_tx_id, reverted: false },
    ]);
    expect(await stack.chain.transfersTo(receiver)).toEqual({
      count: 1,
      total: 16_979_434n,
      txHashes: [done.blockchain_tx_id],
    });
    expect(await refundCases(payout.id)).toBe(0);
  }, 360_000);
});
