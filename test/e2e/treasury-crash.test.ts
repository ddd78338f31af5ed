import { sentHash } from '../support/chain';
import { createChainAndDenylistScreening } from '../../src/adapters/screening/receiver-screening';
import { createPublicClient, http, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { createActivities } from '../../src/activities';
import { createUsdtLedger } from '../../src/adapters/chain/usdt-ledger';
import { getOrCreateTreasuryTransfer } from '../../src/adapters/db/treasury-transfers-repo';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { useStack } from '../support/stack';
import { until } from '../support/until';

// Treasury mode must pay exactly once even when the worker dies at the worst moment: after the
// transfer went out, before the workflow learnt anything about it. The worker is an OS process of
// its own (`src/worker.ts` under tsx's loader, exactly as deployed), so SIGKILL hits it alone.
describe('treasury transfer survives a worker crash (worker as a separate process)', () => {
  const stack = useStack({ env: { SETTLEMENT_MODE: 'treasury' }, worker: false });
  let apiKey: string;

  beforeAll(async () => {
    ({ apiKey } = await stack.createPartner());
  });

  const startWorker = () => stack.startProcess('worker');

  it('SIGKILLed right after the broadcast, a new worker completes the payout with exactly one transfer', async () => {
    const first = await startWorker();
    const { payout, receiver } = await stack.createPayout(apiKey);
    const treasury = stack.treasury.address;
    const nonceBefore = await stack.chain.rpc<Hex>('eth_getTransactionCount', [treasury, 'latest']);

    // Blocks only when the test says so: the broadcast transfer waits in the pool, unconfirmed.
    await stack.chain.setAutomine(false);
    await stack.pay(payout.pix_copy_paste);

    // The signed transfer is stored, and the node has it: the worker has broadcast it. Kill now.
    const txHash = await until('the stored treasury transfer', async () => {
      const { rows } = await stack.db.query<{ tx_hash: Hex }>(
        'SELECT tx_hash FROM treasury_transfers WHERE payout_id = $1',
        [payout.id],
      );
      return rows[0]?.tx_hash;
    });
    await until('the transfer in the node', async () =>
      (await stack.chain.rpc('eth_getTransactionByHash', [txHash])) ? true : undefined,
    );
    await first.kill('SIGKILL');

    const pool = await stack.chain.rpc<{ pending: Record<string, Record<string, unknown>> }>(
      'txpool_content',
    );
    const fromTreasury = Object.entries(pool.pending).find(
      ([from]) => from.toLowerCase() === treasury.toLowerCase(),
    );
    expect(Object.keys(fromTreasury?.[1] ?? {})).toHaveLength(1);
    const during = await stack.waitForStatus(apiKey, payout.id, ['PROCESSING', 'COMPLETED', 'FAILED']);
    expect(during.status).toBe('PROCESSING');

    // A new worker takes over; the chain then mines what is in the pool.
    const second = await startWorker();
    await stack.chain.setAutomine(true);
    await stack.chain.mine();
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED'], 50_000);

    expect(done).toMatchObject({
      status: 'COMPLETED',
      blockchain_tx_id: txHash,
      settled_amount_usdt: 16.979434,
    });
    expect(await stack.chain.transfersTo(receiver)).toEqual({
      count: 1,
      total: 16_979_434n,
      txHashes: [txHash],
    });
    const nonceAfter = await stack.chain.rpc<Hex>('eth_getTransactionCount', [treasury, 'latest']);
    expect(Number(nonceAfter) - Number(nonceBefore)).toBe(1); // nothing else was ever signed and sent
    const { rows } = await stack.db.query('SELECT tx_hash FROM treasury_transfers WHERE payout_id = $1', [
      payout.id,
    ]);
    expect(rows).toEqual([{ tx_hash: txHash }]);
    expect(second.errors()).toEqual([]); // no error logged by the new worker
    await second.kill('SIGTERM');
  }, 60_000);

  describe('the activities behind it (real PostgreSQL and anvil, no Temporal)', () => {
    const activities = () =>
      createActivities({
        db: stack.db,
        provider: {} as never, // not used by the treasury activities
        // Only the denylist: these activity tests never screen (the screening step has tests of its own).
        screening: createChainAndDenylistScreening({
          rpcUrl: stack.rpcUrl,
          db: stack.db,
          sources: ['denylist'],
          tokenAddress: stack.usdtAddress,
          oracleAddress: stack.usdtAddress,
          cacheSeconds: 0,
        }),
        ledger: createUsdtLedger({
          rpcUrl: stack.rpcUrl,
          chainId: 42161,
          usdtAddress: stack.usdtAddress,
          treasuryPrivateKey: stack.treasury.privateKey,
        }),
        logger: createLogger({ level: 'silent', name: 'test' }),
        metrics: createMetrics(),
      });

    it('after a crash between storing and broadcasting, retries send that stored transaction only', async () => {
      const acts = activities();
      const receiver = privateKeyToAddress(generatePrivateKey());
      const payoutId = crypto.randomUUID();
      const ledger = createUsdtLedger({
        rpcUrl: stack.rpcUrl,
        chainId: 42161,
        usdtAddress: stack.usdtAddress,
        treasuryPrivateKey: stack.treasury.privateKey,
      });
      // The first attempt signed and stored the transfer, then its worker died before broadcasting.
      const stored = await getOrCreateTreasuryTransfer(
        stack.db,
        {
          payoutId,
          toAddress: receiver,
          amountUnits: 1_000_000n,
          chainId: 42161,
          fromAddress: stack.treasury.address,
        },
        () => ledger.nextNonce(),
        (nonce) => ledger.signTransfer({ to: receiver, amountUnits: 1_000_000n, nonce }),
      );
      // Retries, even concurrent ones (a timed-out attempt still running), send that one transaction.
      const req = { payoutId, to: receiver, amountUnits: '1000000' };
      const sent = await Promise.all([acts.sendTreasuryTransfer(req), acts.sendTreasuryTransfer(req)]);
      expect(sent).toEqual([{ txHash: stored.txHash }, { txHash: stored.txHash }]);
      await expect(acts.confirmTreasuryTransfer({ ...req, minConfirmations: 1 })).resolves.toMatchObject({
        status: 'confirmed',
      });
      expect(await stack.chain.transfersTo(receiver)).toEqual({
        count: 1,
        total: 1_000_000n,
        txHashes: [stored.txHash],
      });
    });

    it('broadcasts the stored transaction again when the node dropped it from its pool', async () => {
      const acts = activities();
      const receiver = privateKeyToAddress(generatePrivateKey());
      const req = { payoutId: crypto.randomUUID(), to: receiver, amountUnits: '2000000' };
      await stack.chain.setAutomine(false);
      try {
        const txHash = sentHash(await acts.sendTreasuryTransfer(req));
        await stack.chain.rpc('anvil_dropTransaction', [txHash]);
        const client = createPublicClient({ transport: http(stack.rpcUrl) });
        await expect(client.getTransaction({ hash: txHash })).rejects.toThrow();

        // Not found: sent again, and still waiting for a block.
        await expect(acts.confirmTreasuryTransfer({ ...req, minConfirmations: 1 })).rejects.toThrow(
          /broadcast again/,
        );
        expect((await client.getTransaction({ hash: txHash })).hash).toBe(txHash);
        await stack.chain.mine();
        await expect(acts.confirmTreasuryTransfer({ ...req, minConfirmations: 1 })).resolves.toMatchObject({
          status: 'confirmed',
        });
      } finally {
        await stack.chain.setAutomine(true);
      }
      expect((await stack.chain.transfersTo(receiver)).count).toBe(1);
    });
  });
});
