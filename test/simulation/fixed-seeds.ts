/**
 * Seeds whose worlds once broke the money rule (or the simulator's view of it), kept so the defect
 * they found stays fixed: each runs on every CI run. Add the seed `npm run simulate` printed, with
 * what it found, when a fix lands.
 */
export const FIXED_SEEDS: { seed: number; found: string }[] = [
  {
    seed: 10,
    found: 'a transaction named, then dropped, the provider saying failed: waited with no item naming why',
  },
];
