import type { Address } from 'viem';
import { countTransfersTo } from '../../src/adapters/chain/usdt-reads';
import type { Db } from '../../src/adapters/db/pool';
import { REVIEW_KINDS } from '../../src/domain/attention';
import { findPartnerPayout } from '../../src/adapters/db/payouts-repo';
import type { PayoutRecord, PayoutStatus } from '../../src/domain/payout';
import { getPayoutQuery } from '../../src/workflows/payout.contract';
import { ATTENTION_AFTER_MS } from '../../src/workflows/payout/settlement-steps';
import type { ProcessStack } from './process-stack';

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
  const state = await handle.query(getPayoutQuery);
  // Right after a local activity the workflow's clock can differ between the run that wrote the read
  // model (a task the SDK forced when a query was answered as the activity returned) and the replay
  // that answers this query (the activity's completion; docs/decisions.md D80; seen after faults,
  // 37-38 ms): `updatedAt` is held to one second, every other field, money first, to equality.
  const { updatedAt: storedAt, ...storedRest } = comparable(record);
  const { updatedAt: stateAt, ...stateRest } = comparable(state);
  expect(storedRest).toEqual(stateRest);
  expect(Math.abs(Number(storedAt) - Number(stateAt))).toBeLessThan(1_000);
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

  // Ended: nothing is waited on any more, so no attention item that says it is stays open.
  expect({ id: p.id, openAttention: await openWaitingAttention(stack.db, p.id) }).toEqual({
    id: p.id,
    openAttention: [],
  });
}

/**
 * The payout's open attention items that say it waits on something (not those for review, which stay
 * open until an operator acknowledges them).
 */
export async function openWaitingAttention(db: Db, payoutId: string): Promise<string[]> {
  const { rows } = await db.query<{ kind: string }>(
    `SELECT kind FROM payout_attention
      WHERE payout_id = $1 AND cleared_at IS NULL AND NOT (kind = ANY($2)) ORDER BY kind`,
    [payoutId, REVIEW_KINDS],
  );
  return rows.map((r) => r.kind);
}

/** The settings the api gave the payouts (PIX_CHARGE_EXPIRY_SECONDS, SETTLEMENT_TIMEOUT_SECONDS). */
export interface WaitLimits {
  chargeExpirySeconds: number;
  settlementTimeoutSeconds: number;
}

/**
 * No payout waits unseen: one still PENDING past its charge's expiry, or PROCESSING past its
 * settlement deadline, has an open attention item (an operator sees it and can decide it). The
 * workflow raises the expiry's items after ATTENTION_AFTER_MS of an unanswered step, the deadline's
 * at the deadline; `graceMs` covers the activity that writes the row. Expiry counts from created_at
 * and the deadline from the last write of PROCESSING (updated_at), as the workflow counts them.
 */
export async function expectNoneWaitingUnflagged(
  db: Db,
  limits: WaitLimits,
  graceMs = 30_000,
  /** The partner whose payouts to check: on the run's shared database, a test reads only its own rows. */
  partnerId?: string,
): Promise<void> {
  const { rows } = await db.query<{ id: string; status: string; created_at: Date; updated_at: Date }>(
    `SELECT id, status, created_at, updated_at FROM payouts
      WHERE status IN ('PENDING', 'PROCESSING') AND ($1::uuid IS NULL OR partner_id = $1)`,
    [partnerId ?? null],
  );
  const now = Date.now();
  const unflagged: { id: string; status: string; overdueMs: number }[] = [];
  for (const r of rows) {
    const flagAt =
      r.status === 'PENDING'
        ? r.created_at.getTime() + limits.chargeExpirySeconds * 1000 + ATTENTION_AFTER_MS
        : r.updated_at.getTime() + limits.settlementTimeoutSeconds * 1000;
    if (now < flagAt + graceMs) continue;
    if ((await openWaitingAttention(db, r.id)).length === 0) {
      unflagged.push({ id: r.id, status: r.status, overdueMs: now - flagAt });
    }
  }
  expect(unflagged).toEqual([]);
}

/** Across the whole run: no charge at the provider without a payout, no payout left open. */
export async function expectNoOrphans(stack: ProcessStack): Promise<void> {
  const { rows } = await stack.db.query<{ id: string; status: string }>('SELECT id, status FROM payouts');
  const known = new Set(rows.map((r) => r.id));
  const orphanCharges = [...stack.provider.chargesCreated().keys()].filter((id) => !known.has(id));
  expect(orphanCharges).toEqual([]);
  expect(rows.filter((r) => r.status === 'PENDING' || r.status === 'PROCESSING')).toEqual([]);
}
