import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { isRunning, startTime } from '../../dev/local/infra/proc';
import { findLeftovers } from '../../dev/local/leftovers';
import { launch as launchLauncher, launcherEnv, launcherMessages, type Launch } from '../support/launcher';
import { until } from '../support/until';

// The real launcher (`dev/local/start.ts`, as `npm start` runs it) on free loopback ports and a
// data folder of its own, ended every way it can end. One stack is shared where a case leaves it
// running; each way to end it is one start. Waits are on log lines and /readyz, never on time.

const CAP_MS = 120_000;
let data: string;
let env: NodeJS.ProcessEnv;
let apiUrl: string;
const launch = () => launchLauncher(env);
const messages = launcherMessages;

async function readyz(): Promise<number> {
  try {
    return (await fetch(`${apiUrl}/readyz`, { signal: AbortSignal.timeout(5_000) })).status;
  } catch {
    return 0;
  }
}

/** The stack's own processes still running (the launcher's leftover check, as the next start sees them). */
const ownProcesses = () => findLeftovers(data, path.join(data, 'postgres'));

async function stoppedCleanly(l: Launch): Promise<void> {
  expect(await l.exited).toBe(0);
  const stops = messages(l)
    .filter((m) => /^stopped \w+ \(\d+\.\ds\)$/.test(m))
    .map((m) => m.split(' ')[1]);
  expect(stops).toEqual(['api', 'worker', 'sandbox', 'postgres', 'temporal', 'anvil']);
  expect(ownProcesses()).toEqual([]);
}

beforeAll(async () => {
  ({ env, data, apiUrl } = await launcherEnv());
}, CAP_MS);

afterAll(async () => {
  for (const l of launches) if (l.proc.exitCode === null) l.proc.kill('SIGTERM');
  await Promise.all(launches.map((l) => l.exited));
  rmSync(data, { recursive: true, force: true });
});

const launches: Launch[] = [];
const started = async () => {
  const l = launch();
  launches.push(l);
  await l.waitFor(/"ready \(launcher pid/);
  return l;
};
const pgData = () => path.join(env.LOCAL_DATA_DIR!, 'postgres');
const demoPartner = () =>
  (
    JSON.parse(readFileSync(path.join(env.LOCAL_DATA_DIR!, 'demo-partner.json'), 'utf8')) as {
      partner_id: string;
    }
  ).partner_id;

describe('npm start (dev/local/start.ts)', () => {
  let first: Launch;
  let partner: string;
  let usdt: string;
  let oracle: string;

  it(
    'refuses a second start while one runs, naming the running launcher and its API',
    async () => {
      first = await started();
      partner = demoPartner();
      usdt = (await first.waitFor(/USDT test token at/)).match(/0x[0-9a-fA-F]{40}/)![0];
      oracle = (await first.waitFor(/sanctions oracle \(test\) at/)).match(/0x[0-9a-fA-F]{40}/)![0];
      // The summary shows what the api and worker were given: the local oracle, screening out of the box.
      await first.waitFor(new RegExp(`^  Sanctions oracle ${oracle}$`));

      const second = launch();
      expect(await second.exited).toBe(1);
      expect(messages(second)).toEqual([
        expect.stringMatching(
          new RegExp(`already running: launcher pid ${first.proc.pid}, API ${apiUrl.replace(/\./g, '\\.')}`),
        ),
      ]);
      expect(await readyz()).toBe(200);
    },
    CAP_MS,
  );

  it(
    'restarts PostgreSQL killed under it, logging the death, and is ready again',
    async () => {
      const postmaster = Number(readFileSync(path.join(pgData(), 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(postmaster, 'SIGKILL');
      await first.waitFor(
        new RegExp(`postgres \\(pid ${postmaster}\\) exited unexpectedly \\(killed by SIGKILL\\)`),
      );
      await first.waitFor(/"postgres restarted/);
      // /readyz answers 200 again once the api's pool reconnects.
      await until('the api ready again', async () => ((await readyz()) === 200 ? true : undefined), {
        intervalMs: 500,
      });
    },
    CAP_MS,
  );

  it(
    'after a SIGKILL the next start stops the leftovers and comes up with the data; SIGTERM stops it in order',
    async () => {
      const temporal = ownProcesses().find((p) => p.what === 'Temporal dev server')!.pid;
      const temporalStarted = startTime(temporal);
      first.proc.kill('SIGKILL');
      await first.exited;
      const next = await started();
      const msgs = messages(next);
      expect(msgs).toEqual(
        expect.arrayContaining([
          expect.stringMatching(`taking over the lock of launcher pid ${first.proc.pid}`),
          expect.stringMatching(/^stopped PostgreSQL \(pid \d+\) left running by an earlier launcher/),
          expect.stringMatching(/^stopped anvil \(pid \d+\) left running/),
          `USDT test token at ${usdt}`,
          `sanctions oracle (test) at ${oracle}`,
        ]),
      );
      // The Temporal dev server dies by itself at its next log line, its output pipe gone with the
      // launcher (SIGPIPE): stopped by the next start, or gone before it looked, never left running.
      const temporalLines = msgs.filter((m) => / Temporal dev server \(pid \d+\) left running/.test(m));
      expect(temporalLines.length).toBeLessThanOrEqual(1);
      for (const line of temporalLines)
        expect(line).toMatch(new RegExp(`^stopped Temporal dev server \\(pid ${temporal}\\) left running`));
      expect(isRunning(temporal) && startTime(temporal) === temporalStarted).toBe(false);
      expect(demoPartner()).toBe(partner);
      expect(await readyz()).toBe(200);

      next.proc.kill('SIGTERM');
      await stoppedCleanly(next);
    },
    CAP_MS,
  );

  // To the whole group, as a terminal sends them: SIGHUP when it closes, SIGINT on Ctrl-C.
  it.each(['SIGHUP', 'SIGINT'] as const)(
    'stops every part in drain order on %s to the group',
    async (signal) => {
      const l = await started();
      process.kill(-l.proc.pid!, signal);
      await stoppedCleanly(l);
      expect(demoPartner()).toBe(partner);
    },
    CAP_MS,
  );
});
