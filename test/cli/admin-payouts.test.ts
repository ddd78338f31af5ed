import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { createPartner } from '../../src/adapters/db/partners-repo';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { testDatabaseUrl } from '../support/env';
import { compiledEntry } from '../support/compiled';
import { removePayouts, seedPayouts } from '../support/payouts';

// `admin payouts list`: a real CLI process against the test PostgreSQL, on read-model rows as the
// payout workflows write them.
const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [await compiledEntry('src/main/admin.ts'), ...args],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: testDatabaseUrl() },
        timeout: 30_000,
      },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

interface Listed {
  partner_id: string;
  payouts: { id: string; status: string; created_at: string; failure_reason?: string }[];
  has_more: boolean;
  next_starting_after: string | null;
}

describe('admin payouts list', () => {
  let db: Db;
  let partnerId: string;

  beforeAll(async () => {
    db = createPool(testDatabaseUrl(), 2);
    partnerId = (await createPartner(db, 'cli payouts')).partner.id;
    // Five payouts a day apart; the oldest FAILED with a reason.
    await seedPayouts(db, partnerId, {
      count: 5,
      instants: [1, 2, 3, 4, 5].map((day) => `2026-08-0${day}T00:00:00Z`),
      statuses: ['FAILED', 'PENDING', 'PENDING', 'PENDING', 'PENDING'],
      failureReason: 'charge_expired',
    });
  });
  afterAll(async () => {
    await removePayouts(db, partnerId);
    await db?.end();
  });

  const list = async (args: string[]): Promise<Listed> => {
    const result = await cli(['payouts', 'list', '--partner', partnerId, ...args]);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    return JSON.parse(result.stdout) as Listed;
  };

  it('pages newest first with --limit and --starting-after, and shows why a payout failed', async () => {
    const first = await list(['--limit', '3']);
    expect(first.payouts.map((p) => p.created_at)).toEqual([
      '2026-08-05T00:00:00.000Z',
      '2026-08-04T00:00:00.000Z',
      '2026-08-03T00:00:00.000Z',
    ]);
    expect(first).toMatchObject({
      partner_id: partnerId,
      has_more: true,
      next_starting_after: first.payouts[2]!.id,
    });
    const second = await list(['--limit', '3', '--starting-after', first.next_starting_after!]);
    expect(second.payouts.map((p) => p.created_at)).toEqual([
      '2026-08-02T00:00:00.000Z',
      '2026-08-01T00:00:00.000Z',
    ]);
    expect(second).toMatchObject({ has_more: false, next_starting_after: null });
    expect(second.payouts[1]).toMatchObject({ status: 'FAILED', failure_reason: 'charge_expired' });
    expect(second.payouts[0]).not.toHaveProperty('failure_reason');
  });

  it('filters by status and a --since/--until window', async () => {
    expect((await list(['--status', 'failed'])).payouts).toHaveLength(1);
    const window = await list(['--since', '2026-08-02T00:00:00Z', '--until', '2026-08-04T00:00:00Z']);
    expect(window.payouts.map((p) => p.created_at)).toEqual([
      '2026-08-03T00:00:00.000Z',
      '2026-08-02T00:00:00.000Z',
    ]);
  });

  it.each([
    [['--limit', '0'], '--limit must be a whole number from 1 to 500'],
    [['--status', 'DONE'], '--status must be one of PENDING, PROCESSING, COMPLETED, FAILED'],
    [['--since', 'yesterday'], '--since must be an ISO 8601 date-time with a time zone'],
    [['--starting-after', 'x'], '--starting-after must be a payout id (a UUID)'],
  ])('%j is a usage error (exit 2)', async (args, message) => {
    const result = await cli(['payouts', 'list', '--partner', partnerId, ...args]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
  });

  it('a cursor that is not one of the partner’s payouts exits 1', async () => {
    const result = await cli([
      'payouts',
      'list',
      '--partner',
      partnerId,
      '--starting-after',
      '9b2c7a0e-0000-4000-8000-000000000000',
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('no payout 9b2c7a0e-0000-4000-8000-000000000000');
  });
});
