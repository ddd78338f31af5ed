import { payoutResponseSchema } from '../../src/api/payouts/payout.schemas';
import { PAYOUT_STATUSES, toPayoutResponse, type PayoutRecord } from '../../src/domain/payout';
import { completedPayout } from '../support/payouts';
import { PAYOUT_KEYS } from './helpers';
import { DEFAULT_NETWORK } from '../support/network';

// The one serializer (docs/api.md "The Payout object"): a whitelist, so no internal field can leak
// whatever the record holds; settlement fields and timestamps only on COMPLETED.
const TX = `0x${'cd'.repeat(32)}`;

/** A record holding every field, settlement and failure alike, whatever its status says. */
function recordWith(status: PayoutRecord['status']): PayoutRecord {
  return completedPayout({
    status,
    providerChargeId: 'chg_internal',
    blockchainTxId: TX,
    paidAt: '2024-01-01T00:00:01.000Z',
    confirmedAt: '2024-01-01T00:00:02.000Z',
    failureReason: 'provider_reported_failure',
    version: 7,
  });
}

describe('toPayoutResponse', () => {
  it.each(PAYOUT_STATUSES)('%s: only spec keys, snake_case, no internal field', (status) => {
    const response = toPayoutResponse(recordWith(status), DEFAULT_NETWORK);
    const expected =
      status === 'COMPLETED' ? [...PAYOUT_KEYS, 'confirmed_at', 'paid_at'].sort() : PAYOUT_KEYS;
    expect(Object.keys(response).sort()).toEqual(expected);
    const text = JSON.stringify(response);
    for (const internal of [
      'chg_internal',
      'provider_reported_failure',
      '"version"',
      'partnerId',
      '17825311"',
    ]) {
      expect(text).not.toContain(internal);
    }
  });

  it.each(['PENDING', 'PROCESSING', 'FAILED'] as const)(
    '%s shows the initial settlement values even when the record holds others',
    (status) => {
      expect(toPayoutResponse(recordWith(status), DEFAULT_NETWORK)).toMatchObject({
        settled_amount_usdt: 0,
        blockchain_network: '',
        blockchain_chain_id: 0,
        blockchain_tx_id: '',
        block_explorer_url: '',
      });
    },
  );

  it('COMPLETED carries the settlement, as JSON numbers, on the default network (docs/decisions.md D41)', () => {
    expect(toPayoutResponse(recordWith('COMPLETED'), DEFAULT_NETWORK)).toMatchObject({
      amount_brl: 100,
      min_amount_usdt: 17.152658,
      settled_amount_usdt: 17.825311,
      blockchain_network: 'Arbitrum One',
      blockchain_chain_id: 42161,
      blockchain_tx_id: TX,
      block_explorer_url: `https://arbiscan.io/tx/${TX}`,
      paid_at: '2024-01-01T00:00:01.000Z',
      confirmed_at: '2024-01-01T00:00:02.000Z',
    });
  });

  it('names the configured settlement network, never one of its own', () => {
    const testnet = { name: 'Arbitrum Sepolia', chainId: 421614, explorerUrl: 'https://sepolia.arbiscan.io' };
    expect(toPayoutResponse(recordWith('COMPLETED'), testnet)).toMatchObject({
      blockchain_network: 'Arbitrum Sepolia',
      blockchain_chain_id: 421614,
      block_explorer_url: `https://sepolia.arbiscan.io/tx/${TX}`,
    });
  });

  it('the route response schema drops any key the serializer might one day add by mistake', () => {
    const leaky = {
      ...toPayoutResponse(recordWith('PENDING'), DEFAULT_NETWORK),
      providerChargeId: 'chg_internal',
      version: 7,
    };
    expect(Object.keys(payoutResponseSchema.parse(leaky)).sort()).toEqual(PAYOUT_KEYS);
  });
});
