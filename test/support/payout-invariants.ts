import type { Address } from 'viem';
import { countTransfersTo } from '../../src/adapters/chain/usdt-ledger';
import { findPartnerPayout } from '../../src/adapters/db/payouts-repo';
import type { PayoutRecord, PayoutStatus } from '../../src/domain/payout';
import { getPayoutQuery } from '../../src/workflows/payout.contract';
import type { ProcessStack } from './process-stack';

/**
 * Issue 9 makes every paid payout that ends FAILED open a refund case (today only a payment that
 * arrives after the payout ended does). Turn this on once that change is merged.
 */

/** One payout a test created, and what it knows about it. */
export interface TrackedPayout {
  apiKey: string;
  partnerId: string;
  id: string;
  receiver: Address;
  /** The test paid its charge (money was received). */
  paid: boolean;
  expected: PayoutStatus;
  failureReason?: string;
}

const TIME_FIELDS = ['createdAt', 'updatedAt', 'paidAt', 'confirmedAt'] as const;

/** A record with its timestamps as epoch milliseconds (the database and the workflow format them apart). */
function comparable(p: PayoutRecord): Record<string, unknown> {
  const out: Record<string, unknown> = { ...p };
  for (const field of TIME_FIELDS) {
    if (p[field] !== undefined) out[field] = Date.parse(p[field]);
  }
  return out;
}

/**
 * The money invariants of one payout after a fault, checked against every source of truth: the api
 * (what the partner sees), PostgreSQL (read model, refund cases), Temporal (the workflow's state),
 * the provider (charges it created) and the chain (USDT transfers to the receiver).
 */
export async function expectPayoutInvariants(stack: ProcessStack, p: TrackedPayout): Promise<void> {
  const final = await stack.waitForStatus(p.apiKey, p.id, ['COMPLETED', 'FAILED']);
  expect({ id: p.id, status: final.status }).toEqual({ id: p.id, status: p.expected });

  // Read model equals the workflow's own state.
  const stored = await findPartnerPayout(stack.db, p.partnerId, p.id);
  expect(stored).not.toBeNull();
  // The workflow returns once its last state is written to the read model (a query can be ahead of it).
  const handle = stack.temporal.workflow.getHandle(stored!.workflowId);
  await handle.result();
  const {
    workflowId: _workflowId,
    runId: _runId,
    ...record
  } = (await findPartnerPayout(stack.db, p.partnerId, p.id))!;
  expect(comparable(record)).toEqual(comparable(await handle.query(getPayoutQuery)));
  if (p.failureReason) expect(record.failureReason).toBe(p.failureReason);

  // Exactly one charge at the provider.
  expect({ id: p.id, charges: stack.provider.chargesCreated().get(p.id) ?? 0 }).toEqual({
    id: p.id,
    charges: 1,
  });

  // At most one on-chain transfer; exactly the one reported when COMPLETED.
  const transfers = await countTransfersTo({
    rpcUrl: stack.rpcUrl,
    usdtAddress: stack.usdtAddress,
    to: p.receiver,
  });
  if (final.status === 'COMPLETED') {
    expect(transfers.txHashes).toEqual([final.blockchain_tx_id]);
    expect(transfers.total).toBe(BigInt(record.settledAmountUsdtUnits));
  } else {
    expect(transfers.count).toBe(0);
  }

  // Money received and not settled is a refund case.
  if (p.paid && final.status === 'FAILED') {
    const { rows } = await stack.db.query('SELECT 1 FROM refund_cases WHERE payout_id = $1', [p.id]);
    expect({ id: p.id, refundCases: rows.length }).toEqual({ id: p.id, refundCases: 1 });
  }
}

/** Across the whole run: no charge at the provider without a payout, no payout left open. */
export async function expectNoOrphans(stack: ProcessStack): Promise<void> {
  const { rows } = await stack.db.query<{ id: string; status: string }>('SELECT id, status FROM payouts');
  const known = new Set(rows.map((r) => r.id));
  const orphanCharges = [...stack.provider.chargesCreated().keys()].filter((id) => !known.has(id));
  expect(orphanCharges).toEqual([]);
  expect(rows.filter((r) => r.status === 'PENDING' || r.status === 'PROCESSING')).toEqual([]);
}
