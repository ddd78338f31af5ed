import { parsePix } from 'pix-utils';
import { parseBrCode } from '../../src/domain/brcode';
import { useStack } from '../support/stack';

// The first vertical slice on real servers: POST creates a PENDING payout with a valid PIX code
// through the payout workflow, GET answers from it, and paying the code completes it on chain.
describe('payout slice (dev server, PostgreSQL, anvil, sandbox, worker, api)', () => {
  const stack = useStack();
  let apiKey: string;

  beforeAll(async () => {
    ({ apiKey } = await stack.createPartner());
  });

  it('creates a PENDING payout whose PIX code an independent parser accepts, then settles it', async () => {
    // To a wallet nothing else ever paid.
    const { payout, receiver } = await stack.createPayout(apiKey);
    expect(payout).toMatchObject({
      status: 'PENDING',
      amount_brl: 100,
      min_amount_usdt: 17.152658, // 100 / (5.50 x 1.06), rounded down
      settled_amount_usdt: 0,
      blockchain_network: '',
      blockchain_chain_id: 0,
      blockchain_tx_id: '',
      block_explorer_url: '',
    });
    expect(payout).not.toHaveProperty('paid_at');
    expect(payout).not.toHaveProperty('confirmed_at');

    const code = payout.pix_copy_paste as string;
    expect(parseBrCode(code).transactionAmount).toBe('100.00');
    const independent = parsePix(code) as { type?: string; transactionAmount?: number };
    expect(independent.transactionAmount).toBe(100);

    const read = await fetch(`${stack.apiUrl}/v1/payouts/${payout.id}`, { headers: { 'X-API-Key': apiKey } });
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual(payout);

    await stack.pay(code);
    const done = await stack.waitForStatus(apiKey, payout.id as string, ['COMPLETED', 'FAILED']);
    expect(done.status).toBe('COMPLETED');
    expect(done.settled_amount_usdt).toBe(17.825311); // 100 / (5.50 x 1.02), the sandbox's spread
    expect(done.blockchain_network).toBe('Arbitrum One');
    expect(done.blockchain_chain_id).toBe(42161);
    expect(done.block_explorer_url).toBe(`https://arbiscan.io/tx/${done.blockchain_tx_id}`);
    expect(done.paid_at).toEqual(expect.any(String));
    expect(done.confirmed_at).toEqual(expect.any(String));

    const transfers = await stack.chain.transfersTo(receiver);
    expect(transfers.count).toBe(1);
    expect(transfers.total).toBe(17_825_311n);
    expect(transfers.txHashes).toEqual([done.blockchain_tx_id]);
  });
});
