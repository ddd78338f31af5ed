import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/adapters/db/pool';
import type { PayoutRecord, PayoutStatus } from '../../src/domain/payout';
import type { PayoutSettings, PayoutWorkflowInput } from '../../src/workflows/payout.contract';

// Payouts as the service holds them, for tests that start a workflow themselves, hand a record to
// a serializer or an activity, or fill the read model: one place for what a plausible payout is
// (100.00 BRL to a CPF key, the quote of 5.50 with the 6 % buffer, the sandbox's 2 % spread).

/** The anvil dev account every fixture pays: a checksummed address nothing depends on. */
export const RECEIVER_WALLET = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

/** The service's defaults: an hour to pay, six hours to settle, provider mode, one confirmation. */
export const SETTINGS: PayoutSettings = {
  chargeExpirySeconds: 3600,
  settlementTimeoutSeconds: 21_600,
  settlementMode: 'provider',
  settlementConfirmations: 1,
  chainId: 42161,
};

/** What the api starts a payout workflow with: `settings` over SETTINGS, `fields` over the rest. */
export function payoutInput(
  settings: Partial<PayoutSettings> = {},
  fields: Partial<Omit<PayoutWorkflowInput, 'settings'>> = {},
): PayoutWorkflowInput {
  return {
    payoutId: randomUUID(),
    partnerId: randomUUID(),
    amountCentavos: '10000',
    minAmountUsdtUnits: '17152658',
    pixKey: '12345678901',
    pixKeyType: 'CPF',
    receiverWallet: RECEIVER_WALLET,
    createdAt: new Date().toISOString(),
    ...fields,
    settings: { ...SETTINGS, ...settings },
  };
}

/** A payout as its workflow holds it once just created: PENDING, no charge yet. */
export function pendingPayout(over: Partial<PayoutRecord> = {}): PayoutRecord {
  const at = '2026-11-21T22:00:00.000Z';
  return {
    id: randomUUID(),
    partnerId: randomUUID(),
    status: 'PENDING',
    amountCentavos: '10000',
    minAmountUsdtUnits: '17152658',
    settledAmountUsdtUnits: '0',
    pixKey: '12345678901',
    pixKeyType: 'CPF',
    receiverWallet: RECEIVER_WALLET,
    pixCopyPaste: '',
    blockchainTxId: '',
    createdAt: at,
    updatedAt: at,
    version: 1,
    ...over,
  };
}

/** A payout as its workflow holds it when it completes: charged, paid, settled and confirmed. */
export function completedPayout(over: Partial<PayoutRecord> = {}): PayoutRecord {
  return pendingPayout({
    status: 'COMPLETED',
    settledAmountUsdtUnits: '17825311',
    pixCopyPaste: '00020101021226...6304ABCD',
    providerChargeId: 'chg_test',
    blockchainTxId: `0x${'ab'.repeat(32)}`,
    paidAt: '2026-01-01T00:00:01.000Z',
    confirmedAt: '2026-01-01T00:00:05.000Z',
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:05.000Z',
    version: 4,
    ...over,
  });
}

/**
 * Read-model rows for `partnerId`, straight into PostgreSQL as the workflows would have written
 * them (no workflow behind them): `count` rows, created at `instants` in turn, statuses in turn,
 * FAILED ones with `failureReason`. Returns their ids, in insertion order.
 */
export async function seedPayouts(
  db: Db,
  partnerId: string,
  opts: { count: number; instants: string[]; statuses?: PayoutStatus[]; failureReason?: string },
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO payouts (id, partner_id, workflow_id, run_id, version, status, amount_centavos,
       min_amount_usdt_units, pix_key, pix_key_type, receiver_wallet, pix_copy_paste, failure_reason,
       created_at, updated_at)
     SELECT id, $1, 'seed-' || id, 'seed-run', 1, status, 1000 + n, 1700000, '12345678901', 'CPF', $3,
       'code-' || n, CASE WHEN status = 'FAILED' THEN $6 END, at, at
     FROM (SELECT gen_random_uuid() AS id, n, ($2::text[])[1 + n % cardinality($2::text[])] AS status,
             ($4::timestamptz[])[1 + n % cardinality($4::timestamptz[])] AS at
           FROM generate_series(0, $5 - 1) AS n) AS s
     ORDER BY n
     RETURNING id`,
    [
      partnerId,
      opts.statuses ?? ['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED'],
      RECEIVER_WALLET,
      opts.instants,
      opts.count,
      opts.failureReason ?? 'charge_expired',
    ],
  );
  return rows.map((r) => r.id);
}

/**
 * Removes a partner's read-model rows: seeded rows have no workflow to end them, and open ones
 * would otherwise stay in the run's shared database for every later reader (the open-payout gauges).
 */
export async function removePayouts(db: Db, partnerId: string): Promise<void> {
  await db.query('DELETE FROM payouts WHERE partner_id = $1', [partnerId]);
}
