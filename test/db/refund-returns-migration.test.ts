import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createOwnDatabase } from '../support/database';
import { createPool } from '../../src/adapters/db/pool';

// The refund-returns migration's way back on the real PostgreSQL, with cases in the new states: a
// returned case comes back resolved (the money went back), any other unfinished one open; and up again.
it('the refund-returns migration goes down with cases in the new states, and up again', async () => {
  const own = await createOwnDatabase();
  const sql = readFileSync(path.join(__dirname, '../../migrations/1795410000000_refund-returns.sql'), 'utf8');
  const [up, down] = sql.split('-- Down Migration');
  const db = createPool(own.url, 1);
  try {
    await db.query(`INSERT INTO refund_cases (event_id, payout_id, charge_id, amount_brl, reason, kind, status)
      VALUES ('e1', gen_random_uuid(), 'c', '1.00', 'r', 'wrong_amount', 'returned'), ('e2', gen_random_uuid(), 'c', '1.00', 'r', 'late_payment', 'refused')`);
    await db.query(down!);
    const { rows } = await db.query(
      'SELECT event_id, status, resolution_note FROM refund_cases ORDER BY event_id',
    );
    expect(rows).toEqual([
      { event_id: 'e1', status: 'resolved', resolution_note: 'returned through the provider' },
      { event_id: 'e2', status: 'open', resolution_note: null },
    ]);
    await db.query(up!);
    const after = await db.query('SELECT status FROM refund_case_changes ORDER BY status');
    expect(after.rows).toEqual([{ status: 'open' }, { status: 'open' }, { status: 'resolved' }]);
  } finally {
    await db.end();
    await own.drop();
  }
});
