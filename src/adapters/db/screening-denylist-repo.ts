import type { Db } from './pool';

/** A wallet the operators refuse to pay, who put it there, when and why. */
export interface DenylistEntry {
  wallet: string;
  reason: string;
  addedBy: string;
  addedAt: string;
}

/** Wallets are kept lower-case: the same address in any checksum case is one entry. */
function key(wallet: string): string {
  return wallet.toLowerCase();
}

/** Adds (or re-adds, with the new reason) a wallet; every change is also logged with who and why. */
export async function denyWallet(db: Db, a: { wallet: string; by: string; reason: string }): Promise<void> {
  await db.query(
    `WITH entry AS (
       INSERT INTO screening_denylist (wallet, reason, added_by) VALUES ($1, $3, $2)
       ON CONFLICT (wallet) DO UPDATE SET reason = EXCLUDED.reason, added_by = EXCLUDED.added_by, added_at = now()
     )
     INSERT INTO screening_denylist_changes (wallet, action, changed_by, reason) VALUES ($1, 'deny', $2, $3)`,
    [key(a.wallet), a.by, a.reason],
  );
}

/** Removes a wallet; false when it was not on the list (nothing is logged then). */
export async function allowWallet(
  db: Db,
  a: { wallet: string; by: string; reason: string },
): Promise<boolean> {
  const { rows } = await db.query<{ removed: boolean }>(
    `WITH removed AS (DELETE FROM screening_denylist WHERE wallet = $1 RETURNING wallet),
          logged AS (
            INSERT INTO screening_denylist_changes (wallet, action, changed_by, reason)
            SELECT wallet, 'allow', $2, $3 FROM removed
          )
     SELECT EXISTS (SELECT 1 FROM removed) AS removed`,
    [key(a.wallet), a.by, a.reason],
  );
  return rows[0]?.removed ?? false;
}

export async function findDeniedWallet(db: Db, wallet: string): Promise<DenylistEntry | null> {
  const { rows } = await db.query<{ wallet: string; reason: string; added_by: string; added_at: Date }>(
    'SELECT wallet, reason, added_by, added_at FROM screening_denylist WHERE wallet = $1',
    [key(wallet)],
  );
  const r = rows[0];
  return r
    ? { wallet: r.wallet, reason: r.reason, addedBy: r.added_by, addedAt: r.added_at.toISOString() }
    : null;
}

export async function listDeniedWallets(db: Db): Promise<DenylistEntry[]> {
  const { rows } = await db.query<{ wallet: string; reason: string; added_by: string; added_at: Date }>(
    'SELECT wallet, reason, added_by, added_at FROM screening_denylist ORDER BY added_at, wallet',
  );
  return rows.map((r) => ({
    wallet: r.wallet,
    reason: r.reason,
    addedBy: r.added_by,
    addedAt: r.added_at.toISOString(),
  }));
}
