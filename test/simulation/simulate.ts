/**
 * Runs many seeded worlds and reports what broke the money rule:
 *   npm run simulate -- --worlds 100000 [--seed 42] [--reorgs flip] [--plant <defect>] [--json]
 * With --seed alone, that one world is run and its trace printed: a seed replays its world exactly.
 * --plant runs a core with a planted defect (planted.ts) until the first world it breaks.
 */
import { PLANTED } from './planted';
import { runWorld, type WorldResult } from './run-world';
import type { WorldOptions } from './provider-world';

export interface Summary {
  worlds: number;
  outcomes: Record<WorldResult['outcome'], number>;
  hiddenTransfers: number;
  violations: WorldResult[];
}

/** Worlds `first` .. `first + count - 1`; each seed is its own world. */
export function simulate(
  first: number,
  count: number,
  options?: WorldOptions,
  run = runWorld,
  /** Stops at the first world that breaks the rule (to show a planted defect is caught). */
  untilViolation = false,
): Summary {
  const summary: Summary = {
    worlds: 0,
    outcomes: { COMPLETED: 0, FAILED: 0, waiting: 0 },
    hiddenTransfers: 0,
    violations: [],
  };
  for (let seed = first; seed < first + count; seed++) {
    const result = run(seed, options);
    summary.worlds++;
    summary.outcomes[result.outcome]++;
    if (result.hiddenTransfer) summary.hiddenTransfers++;
    if (result.violations.length > 0) {
      summary.violations.push(result);
      if (untilViolation) break;
    }
  }
  return summary;
}

function main(argv: string[]): number {
  const arg = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const reorgs = arg('reorgs') === 'flip' ? 'flip' : 'same_result';
  const plantName = arg('plant');
  const planted = plantName === undefined ? undefined : PLANTED[plantName];
  if (plantName !== undefined && planted === undefined) {
    process.stderr.write(`no planted defect ${plantName}: one of ${Object.keys(PLANTED).join(', ')}\n`);
    return 2;
  }
  const seed = arg('seed') === undefined ? undefined : Number(arg('seed'));
  const worlds = arg('worlds') === undefined ? (seed === undefined ? 10_000 : 1) : Number(arg('worlds'));
  if (!Number.isSafeInteger(worlds) || worlds < 1 || (seed !== undefined && !Number.isSafeInteger(seed))) {
    process.stderr.write('usage: npm run simulate -- [--worlds N] [--seed S] [--reorgs flip] [--trace]\n');
    return 2;
  }
  const started = performance.now();
  const summary = simulate(
    seed ?? 1,
    worlds,
    { reorgs },
    planted && ((s, options) => runWorld(s, options, planted.core)),
    planted !== undefined,
  );
  const seconds = (performance.now() - started) / 1000;
  if (argv.includes('--json')) {
    const first = summary.violations[0];
    process.stdout.write(
      JSON.stringify({
        worlds: summary.worlds,
        outcomes: summary.outcomes,
        hiddenTransfers: summary.hiddenTransfers,
        violations: summary.violations.map((v) => ({ seed: v.seed, violations: v.violations })),
        firstTrace: first?.trace ?? [],
      }) + '\n',
    );
    return 0;
  }
  const { COMPLETED, FAILED, waiting } = summary.outcomes;
  process.stdout.write(
    `${summary.worlds} worlds from seed ${seed ?? 1} (reorgs: ${reorgs}) in ${seconds.toFixed(1)} s: ` +
      `${COMPLETED} COMPLETED, ${FAILED} FAILED, ${waiting} still waiting (attention open); ` +
      `${summary.hiddenTransfers} where the provider hid a transfer it made; ` +
      `${summary.violations.length} violation(s)${planted ? ` with the planted defect: ${planted.what}` : ''}\n`,
  );
  const traceAll = argv.includes('--trace') || (worlds === 1 && seed !== undefined);
  for (const v of summary.violations.slice(0, 5)) {
    process.stdout.write(`\nseed ${v.seed}: ${v.violations.join('; ')}\n`);
    process.stdout.write(
      `replay: npm run simulate -- --seed ${v.seed}${reorgs === 'flip' ? ' --reorgs flip' : ''}\n`,
    );
    process.stdout.write(v.trace.map((l) => `  ${l}`).join('\n') + '\n');
  }
  if (traceAll && summary.violations.length === 0) {
    const one = runWorld(seed ?? 1, { reorgs });
    process.stdout.write(
      `\nseed ${one.seed}: ${one.outcome}\n${one.trace.map((l) => `  ${l}`).join('\n')}\n`,
    );
  }
  return summary.violations.length === 0 ? 0 : 1;
}

if (require.main === module) {
  // A reader that stops early (`| head`) is no error of the simulation.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
  process.exitCode = main(process.argv.slice(2));
}
