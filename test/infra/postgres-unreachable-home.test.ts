import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { reachableDataDir } from '../../dev/local/infra/postgres';
import { removeCluster, ROOT_STATE_DIR } from '../../dev/local/infra/postgres-relocation';

const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);

// As root, PostgreSQL runs as the `postgres` system user, which cannot enter a 0700 directory such
// as root's home: the embedded server must still start, with its data where that user can reach it.
const asRoot = process.getuid?.() === 0;

(asRoot ? describe : describe.skip)('embedded PostgreSQL as root under a 0700 directory', () => {
  const home = mkdtempSync(path.join(os.tmpdir(), 'payouts-0700-home-')); // mkdtemp: mode 0700
  afterAll(async () => {
    // The relocated cluster outlives the checkout by design; this one's checkout is a test's.
    const id = readFileSync(path.join(home, 'clone', '.data', 'checkout-id'), 'utf8').trim();
    await removeCluster(path.join(ROOT_STATE_DIR, `postgres-${id}`));
    rmSync(home, { recursive: true, force: true });
  });

  it('keeps a reachable data directory as it is, and moves an unreachable one, stably', () => {
    expect(reachableDataDir(path.join(os.tmpdir(), 'x', 'data'))).toBe(path.join(os.tmpdir(), 'x', 'data'));
    const requested = path.join(home, 'clone', '.data', 'postgres');
    const moved = reachableDataDir(requested);
    expect(moved).toMatch(/^\/var\/lib\/pix-usdt-payouts\/postgres-[0-9a-f]{16}$/);
    expect(reachableDataDir(requested)).toBe(moved);
  });

  it('starts a cluster whose requested data directory is inside it, and serves queries', async () => {
    const { stdout } = await run(
      process.execPath,
      [
        '--import',
        'tsx',
        'test/infra/fixtures/postgres-roundtrip.ts',
        path.join(home, 'clone', '.data', 'postgres'),
      ],
      { cwd: ROOT },
    );
    const result = JSON.parse(stdout) as { dataDir: string; rows: unknown[] };
    expect(result.dataDir.startsWith(home)).toBe(false);
    expect(result.rows).toEqual([{ one: 1 }]);
  }, 90_000);
});
