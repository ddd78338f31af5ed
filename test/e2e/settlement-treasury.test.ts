import { createPublicClient, http } from 'viem';
import { useStack } from '../support/stack';

// Treasury-mode settlement on real servers: the worker itself sends min_amount_usdt from the
// operator's treasury key on anvil (chain id 42161); the provider only collects the PIX payment.
describe('treasury settlement (dev server, PostgreSQL, anvil, sandbox, worker, api)', () => {
  const stack = useStack({ env: { SETTLEMENT_MODE: 'treasury' } });
  let apiKey: string;

  beforeAll(async () => {
    ({ apiKey } = await stack.createPartner());
  });

  it('completes with exactly one transfer of min_amount_usdt from the treasury', async () => {
    const { payout, receiver } = await stack.createPayout(apiKey);
    await stack.pay(payout.pix_copy_paste);
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED']);

    // Treasury mode quotes from the chain's test feeds: 100 / (1.0001 / 0.18 × 1.06), rounded down.
    expect(done).toMatchObject({
      status: 'COMPLETED',
      min_amount_usdt: 16.979434,
      settled_amount_usdt: 16.979434,
      blockchain_network: 'Arbitrum One',
      blockchain_chain_id: 42161,
      block_explorer_url: `https://arbiscan.io/tx/${done.blockchain_tx_id}`,
    });
    expect(done.paid_at).toEqual(expect.any(String));
    expect(done.confirmed_at).toEqual(expect.any(String));

    const transfers = await stack.chain.transfersTo(receiver);
    expect(transfers).toEqual({ count: 1, total: 16_979_434n, txHashes: [done.blockchain_tx_id] });
    const tx = await createPublicClient({ transport: http(stack.rpcUrl) }).getTransaction({
      hash: done.blockchain_tx_id as `0x${string}`,
    });
    expect(tx.from.toLowerCase()).toBe(stack.treasury.address.toLowerCase());
    expect(tx.chainId).toBe(42161);

    // The signed transaction was stored before it was broadcast: that row is what makes it once-only.
    const { rows } = await stack.db.query(
      'SELECT tx_hash, amount_units FROM treasury_transfers WHERE payout_id = $1',
      [payout.id],
    );
    expect(rows).toEqual([{ tx_hash: done.blockchain_tx_id, amount_units: 16_979_434n }]);
  });
});
