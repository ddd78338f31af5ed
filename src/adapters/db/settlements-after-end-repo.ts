import { raiseOrExtendAttention } from './attention-repo';
import type { Db } from './pool';

/**
 * Settlement reports that came after their payout ended (docs/decisions.md D85): the provider says it
 * sent USDT (`settlement.completed`) for a payout that is FAILED, or COMPLETED by another transaction.
 * USDT may have reached the receiver while the service thinks otherwise, so each is kept once per
 * payout and transaction (table settlements_after_end), opens the payout's `settled_after_end` review
 * item, and holds the payout's refund cases: none is returned while a report is on record.
 */
export interface SettlementAfterEnd {
  payoutId: string;
  /** Lower case, as every transaction hash is kept. */
  txHash: string;
  /** Decimal USDT, as the provider reported it. */
  amountUsdt: string;
  chainId: number;
  /** The payout's status when the report came, as its workflow knew it. */
  payoutStatus: string;
  /** The provider event of the first report of this transaction. */
  eventId: string;
  reportedAt: string;
}

const RUNBOOK = 'docs/operations.md#settlement-reported-after-the-payout-ended';

/** The one wording of a report: the attention item's detail and every refusal name it so. */
export function describeSettlementAfterEnd(
  r: Pick<SettlementAfterEnd, 'txHash' | 'amountUsdt' | 'chainId' | 'payoutStatus'>,
): string {
  return `${r.amountUsdt} USDT sent in ${r.txHash} (chain ${r.chainId}), reported by the provider after the payout was ${r.payoutStatus}`;
}

/** Why a refund case of the payout is not returned: its payout's reports, and where to read on. */
export function refundHeldBySettlement(reports: readonly SettlementAfterEnd[]): string {
  return (
    `USDT may have left for payout ${reports[0]?.payoutId ?? '?'}: ` +
    `${reports.map(describeSettlementAfterEnd).join('; ')}. ` +
    `No BRL goes back while the report is on record (${RUNBOOK})`
  );
}

/**
 * Keeps the report and opens (or extends) the payout's `settled_after_end` item in one transaction:
 * `recorded` is true the first time for this payout and transaction only (a retried activity, a
 * redelivered event find it there), and a failed attempt leaves neither, so its retry is the first.
 * `attentionOpened`: a new item, rather than one already open for another transaction.
 */
export async function recordSettlementAfterEnd(
  db: Db,
  r: Omit<SettlementAfterEnd, 'reportedAt'>,
): Promise<{ recorded: boolean; attentionOpened: boolean }> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    const inserted = await client.query(
      `INSERT INTO settlements_after_end (payout_id, tx_hash, amount_usdt, chain_id, payout_status, event_id)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (payout_id, tx_hash) DO NOTHING`,
      [r.payoutId, r.txHash.toLowerCase(), r.amountUsdt, r.chainId, r.payoutStatus, r.eventId],
    );
    const recorded = inserted.rowCount === 1;
    const attentionOpened =
      recorded &&
      (await raiseOrExtendAttention(client, {
        payoutId: r.payoutId,
        kind: 'settled_after_end',
        detail: describeSettlementAfterEnd({ ...r, txHash: r.txHash.toLowerCase() }),
      }));
    await client.query('COMMIT');
    return { recorded, attentionOpened };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/** The payout's reports after its end, oldest first; none for almost every payout. */
export async function findSettlementsAfterEnd(db: Db, payoutId: string): Promise<SettlementAfterEnd[]> {
  const { rows } = await db.query<{
    payout_id: string;
    tx_hash: string;
    amount_usdt: string;
    chain_id: number;
    payout_status: string;
    event_id: string;
    reported_at: Date;
  }>(
    `SELECT payout_id, tx_hash, amount_usdt, chain_id, payout_status, event_id, reported_at
       FROM settlements_after_end WHERE payout_id = $1 ORDER BY reported_at, tx_hash`,
    [payoutId],
  );
  return rows.map((row) => ({
    payoutId: row.payout_id,
    txHash: row.tx_hash,
    amountUsdt: row.amount_usdt,
    chainId: row.chain_id,
    payoutStatus: row.payout_status,
    eventId: row.event_id,
    reportedAt: row.reported_at.toISOString(),
  }));
}
