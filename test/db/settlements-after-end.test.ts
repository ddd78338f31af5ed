import { randomUUID } from 'node:crypto';
import { createPayoutBookkeepingActivities } from '../../src/activities/payout-bookkeeping.activities';
import { listOpenAttention } from '../../src/adapters/db/attention-repo';
import { createPartner } from '../../src/adapters/db/partners-repo';
import { upsertPayout } from '../../src/adapters/db/payouts-repo';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { findSettlementsAfterEnd } from '../../src/adapters/db/settlements-after-end-repo';
import type { PayoutStatus } from '../../src/domain/payout';
import type { ProviderEvent } from '../../src/domain/provider-event';
import { createLogger } from '../../src/observability/logger';
import { createMetrics, type Metrics } from '../../src/observability/metrics';
import { createOwnDatabase, type OwnDatabase } from '../support/database';
import { pendingPayout } from '../support/payouts';

// The bookkeeping activity for a settlement reported after the payout ended (docs/decisions.md D85),
// on a real PostgreSQL of its own (a test below puts a trigger on payout_attention): recorded once per
// payout and transaction over retries and redeliveries, counted once from a series that starts at 0,
// and the payout's settled_after_end review item naming each transaction and amount.

let own: OwnDatabase;
let db: Db;
let partnerId: string;

beforeAll(async () => {
  own = await createOwnDatabase();
  db = createPool(own.url, 3);
  partnerId = (await createPartner(db, 'settlements after the end')).partner.id;
});
afterAll(async () => {
  await db?.end();
  await own?.drop();
});

function bookkeeping() {
  const metrics = createMetrics();
  const activities = createPayoutBookkeepingActivities({
    db,
    logger: createLogger({ level: 'silent', name: 'test' }),
    metrics,
  });
  return { metrics, activities };
}

const counter = async (metrics: Metrics, name: keyof Metrics, labels: Record<string, string> = {}) =>
  (
    await (
      metrics[name] as { get(): Promise<{ values: { value: number; labels: Record<string, string> }[] }> }
    ).get()
  ).values
    .filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
    .reduce((sum, v) => sum + v.value, 0);

/** An ended payout in the read model, as its workflow wrote it. */
async function endedPayout(status: PayoutStatus, blockchainTxId = ''): Promise<string> {
  const payout = pendingPayout({ partnerId, status, blockchainTxId, version: 3 });
  await upsertPayout(db, payout, `payout-${payout.id}`, 'run-1');
  return payout.id;
}

const txHash = (): `0x${string}` => `0x${randomUUID().replace(/-/g, '')}${randomUUID().replace(/-/g, '')}`;

function settled(payoutId: string, tx: `0x${string}`, amountUsdt = '17.500000'): ProviderEvent {
  return {
    type: 'settlement.completed',
    eventId: `evt_${randomUUID().slice(0, 12)}`,
    chargeId: 'chg_after_end',
    externalId: payoutId,
    occurredAt: '2026-12-01T10:00:00.000Z',
    txHash: tx,
    amountUsdt,
    chainId: 42161,
    confirmedAt: '2026-12-01T10:00:00.000Z',
  };
}

const reportsOf = async (payoutId: string) => findSettlementsAfterEnd(db, payoutId);
const itemsOf = async (payoutId: string) =>
  (await listOpenAttention(db, { payoutId })).map((i) => ({ kind: i.kind, detail: i.detail }));

it('counts from a series at 0 for every payout status, so increase() sees the first report', async () => {
  const { metrics } = bookkeeping();
  const { values } = await metrics.settlementsAfterEnd.get();
  expect(values.map((v) => [v.labels.status, v.value]).sort()).toEqual([
    ['COMPLETED', 0],
    ['FAILED', 0],
    ['PENDING', 0],
    ['PROCESSING', 0],
  ]);
});

it('a report for a FAILED payout: recorded, counted and raised once over retries and redeliveries', async () => {
  const { metrics, activities } = bookkeeping();
  const payoutId = await endedPayout('FAILED');
  const tx = txHash();
  const event = settled(payoutId, tx.toUpperCase().replace('0X', '0x') as `0x${string}`);
  // The activity retried (same event), then the event redelivered under another id.
  for (let i = 0; i < 3; i++) await activities.alertLateSettlement({ payoutId, status: 'FAILED', event });
  await activities.alertLateSettlement({
    payoutId,
    status: 'FAILED',
    event: { ...event, eventId: 'evt_redelivered' },
  });

  expect(await reportsOf(payoutId)).toEqual([
    expect.objectContaining({
      txHash: tx.toLowerCase(),
      amountUsdt: '17.500000',
      chainId: 42161,
      payoutStatus: 'FAILED',
      eventId: event.eventId,
    }),
  ]);
  expect(await counter(metrics, 'settlementsAfterEnd', { status: 'FAILED' })).toBe(1);
  expect(await counter(metrics, 'attentionRaised', { kind: 'settled_after_end' })).toBe(1);
  expect(await itemsOf(payoutId)).toEqual([
    {
      kind: 'settled_after_end',
      detail: `17.500000 USDT sent in ${tx.toLowerCase()} (chain 42161), reported by the provider after the payout was FAILED`,
    },
  ]);

  // Another transaction for the same payout is another report: counted, and named by the same item.
  const second = txHash();
  await activities.alertLateSettlement({
    payoutId,
    status: 'FAILED',
    event: settled(payoutId, second, '3.25'),
  });
  await activities.alertLateSettlement({
    payoutId,
    status: 'FAILED',
    event: settled(payoutId, second, '3.25'),
  });
  expect((await reportsOf(payoutId)).map((r) => r.txHash).sort()).toEqual([tx.toLowerCase(), second].sort());
  expect(await counter(metrics, 'settlementsAfterEnd', { status: 'FAILED' })).toBe(2);
  expect(await counter(metrics, 'attentionRaised', { kind: 'settled_after_end' })).toBe(1);
  const [item, ...more] = await itemsOf(payoutId);
  expect(more).toEqual([]);
  expect(item!.detail).toContain(tx.toLowerCase());
  expect(item!.detail).toContain(`3.25 USDT sent in ${second}`);
});

it('an acknowledged item is not raised again by a redelivery: the report is on record already', async () => {
  const { metrics, activities } = bookkeeping();
  const payoutId = await endedPayout('FAILED');
  const event = settled(payoutId, txHash());
  await activities.alertLateSettlement({ payoutId, status: 'FAILED', event });
  await db.query("UPDATE payout_attention SET cleared_at = now(), cleared_by = 'ana' WHERE payout_id = $1", [
    payoutId,
  ]);
  await activities.alertLateSettlement({ payoutId, status: 'FAILED', event });
  expect(await itemsOf(payoutId)).toEqual([]);
  expect(await counter(metrics, 'settlementsAfterEnd', { status: 'FAILED' })).toBe(1);
  expect(await reportsOf(payoutId)).toHaveLength(1);
});

it('a COMPLETED payout: its own transfer reported again is no news; another transaction is a report', async () => {
  const { metrics, activities } = bookkeeping();
  const own = txHash();
  const payoutId = await endedPayout('COMPLETED', own);
  // Reached only from histories whose payout location had no transaction to compare (older code).
  await activities.alertLateSettlement({
    payoutId,
    status: 'COMPLETED',
    event: settled(payoutId, own.toUpperCase().replace('0X', '0x') as `0x${string}`),
  });
  expect(await reportsOf(payoutId)).toEqual([]);
  expect(await itemsOf(payoutId)).toEqual([]);
  expect(await counter(metrics, 'settlementsAfterEnd')).toBe(0);

  const other = txHash();
  await activities.alertLateSettlement({ payoutId, status: 'COMPLETED', event: settled(payoutId, other) });
  expect((await reportsOf(payoutId)).map((r) => [r.txHash, r.payoutStatus])).toEqual([[other, 'COMPLETED']]);
  expect(await counter(metrics, 'settlementsAfterEnd', { status: 'COMPLETED' })).toBe(1);
  expect(await itemsOf(payoutId)).toEqual([
    { kind: 'settled_after_end', detail: expect.stringContaining(`sent in ${other}`) },
  ]);
});

it('a failed settlement after the end records nothing', async () => {
  const { metrics, activities } = bookkeeping();
  const payoutId = await endedPayout('FAILED');
  await activities.alertLateSettlement({
    payoutId,
    status: 'FAILED',
    event: {
      type: 'settlement.failed',
      eventId: 'evt_failed_late',
      chargeId: 'chg_after_end',
      externalId: payoutId,
      occurredAt: '2026-12-01T10:00:00.000Z',
      failureReason: 'provider gave up',
    },
  });
  expect(await reportsOf(payoutId)).toEqual([]);
  expect(await itemsOf(payoutId)).toEqual([]);
  expect(await counter(metrics, 'settlementsAfterEnd')).toBe(0);
});

it('an attempt that fails writing the item leaves no report: its retry records, raises and counts', async () => {
  const { metrics, activities } = bookkeeping();
  const payoutId = await endedPayout('FAILED');
  const event = settled(payoutId, txHash());
  await db.query(`CREATE FUNCTION refuse_attention() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'attention unwritable'; END $$`);
  await db.query(
    'CREATE TRIGGER refuse_attention BEFORE INSERT ON payout_attention FOR EACH ROW EXECUTE FUNCTION refuse_attention()',
  );
  try {
    await expect(activities.alertLateSettlement({ payoutId, status: 'FAILED', event })).rejects.toThrow(
      'attention unwritable',
    );
  } finally {
    await db.query('DROP TRIGGER refuse_attention ON payout_attention');
    await db.query('DROP FUNCTION refuse_attention()');
  }
  expect(await reportsOf(payoutId)).toEqual([]);
  expect(await counter(metrics, 'settlementsAfterEnd', { status: 'FAILED' })).toBe(0);

  await activities.alertLateSettlement({ payoutId, status: 'FAILED', event });
  expect(await reportsOf(payoutId)).toHaveLength(1);
  expect(await itemsOf(payoutId)).toHaveLength(1);
  expect(await counter(metrics, 'settlementsAfterEnd', { status: 'FAILED' })).toBe(1);
});
