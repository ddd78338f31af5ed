import { execFile } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { FIXED_SEEDS } from './fixed-seeds';
import { PLANTED } from './planted';
import { runWorld } from './run-world';

// The provider settlement's decision core over seeded worlds (docs/decisions.md D86): CI's budget of
// worlds, the seeds that once found a defect, and defects planted in the core that the simulator must
// catch (a simulator that finds nothing proves nothing until it is shown to find something). The
// budget runs as `npm run simulate` runs it, in its own process: jest's module sandbox runs the same
// code about three times slower.
const BUDGET = 20_000;

interface Report {
  worlds: number;
  outcomes: { COMPLETED: number; FAILED: number; waiting: number };
  violations: { seed: number; violations: string[] }[];
  firstTrace: string[];
}

async function simulate(...args: string[]): Promise<Report> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--import',
      pathToFileURL(require.resolve('tsx')).href,
      'test/simulation/simulate.ts',
      '--json',
      ...args,
    ],
    { cwd: `${__dirname}/../..`, maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(stdout) as Report;
}

describe('world simulator: provider settlement', () => {
  it(`holds the money rule over ${BUDGET} seeded worlds`, async () => {
    const report = await simulate('--worlds', String(BUDGET));
    expect({ violations: report.violations.slice(0, 3), trace: report.firstTrace }).toEqual({
      violations: [],
      trace: [],
    });
    // The worlds reach every ending, or the budget proves less than it says.
    expect(report.worlds).toBe(BUDGET);
    expect(report.outcomes.COMPLETED).toBeGreaterThan(BUDGET / 4);
    expect(report.outcomes.FAILED).toBeGreaterThan(BUDGET / 10);
    expect(report.outcomes.waiting).toBeGreaterThan(BUDGET / 50);
  });

  it.each(Object.entries(PLANTED))('catches a planted defect: %s', async (name) => {
    const report = await simulate('--worlds', String(BUDGET), '--plant', name);
    expect(report.violations).toEqual([
      { seed: expect.any(Number), violations: expect.arrayContaining([expect.any(String)]) },
    ]);
  });

  it.each(FIXED_SEEDS)('seed $seed ($found) holds', ({ seed }) => {
    expect(runWorld(seed).violations).toEqual([]);
  });

  it('replays a world exactly from its seed', () => {
    expect(runWorld(4242).trace).toEqual(runWorld(4242).trace);
  });
});
