import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { findDeniedWallet } from '../../src/adapters/db/screening-denylist-repo';
import { testDatabaseUrl } from '../support/env';
import { compiledEntry } from '../support/compiled';

const ROOT = path.resolve(__dirname, '../..');

/** The admin CLI as the operator runs it, against the test database. */
async function admin(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const entry = await compiledEntry('src/main/admin.ts');
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [entry, ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: testDatabaseUrl(), NODE_ENV: 'development' } },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('admin CLI: the screening denylist', () => {
  let db: Db;
  beforeAll(() => {
    db = createPool(testDatabaseUrl(), 2);
  });
  afterAll(() => db?.end());

  const freshWallet = () => `0x${randomBytes(20).toString('hex')}`;

  it('denies, lists and allows a wallet, keeping who and why for every change', async () => {
    const wallet = freshWallet();
    const mixedCase = `0x${wallet.slice(2).toUpperCase()}`;
    const denied = await admin([
      'screening',
      'deny',
      '--wallet',
      mixedCase,
      '--by',
      'ana@ops',
      '--reason',
      'court order 12',
    ]);
    expect(denied).toMatchObject({ code: 0 });
    expect(JSON.parse(denied.stdout)).toEqual({ wallet, denied: true });
    expect(await findDeniedWallet(db, wallet)).toMatchObject({
      wallet,
      addedBy: 'ana@ops',
      reason: 'court order 12',
    });

    const listed = await admin(['screening', 'list']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).denylist).toContainEqual(
      expect.objectContaining({ wallet, added_by: 'ana@ops', reason: 'court order 12' }),
    );

    const allowed = await admin([
      'screening',
      'allow',
      '--wallet',
      wallet,
      '--by',
      'bo@ops',
      '--reason',
      'order lifted',
    ]);
    expect(allowed).toMatchObject({ code: 0 });
    expect(await findDeniedWallet(db, wallet)).toBeNull();
    const { rows } = await db.query<{ action: string; changed_by: string; reason: string }>(
      'SELECT action, changed_by, reason FROM screening_denylist_changes WHERE wallet = $1 ORDER BY id',
      [wallet],
    );
    expect(rows).toEqual([
      { action: 'deny', changed_by: 'ana@ops', reason: 'court order 12' },
      { action: 'allow', changed_by: 'bo@ops', reason: 'order lifted' },
    ]);
  });

  it('refuses a bad wallet, a missing reason, and allowing a wallet not on the list, changing nothing', async () => {
    const wallet = freshWallet();
    const bad = await admin(['screening', 'deny', '--wallet', '0x1234', '--by', 'ana', '--reason', 'x']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--wallet/);
    const noReason = await admin(['screening', 'deny', '--wallet', wallet, '--by', 'ana']);
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toMatch(/--reason/);
    const notListed = await admin(['screening', 'allow', '--wallet', wallet, '--by', 'ana', '--reason', 'x']);
    expect(notListed.code).toBe(1);
    expect(notListed.stderr).toMatch(/not on the denylist/);
    const { rows } = await db.query('SELECT 1 FROM screening_denylist_changes WHERE wallet = $1', [wallet]);
    expect(rows).toHaveLength(0);
  });
});
