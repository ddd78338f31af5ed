import { bool, int } from './values';

/** Partners' callbacks: where they may go and how long an attempt may take. */

export const CALLBACK_VARIABLES = {
  CALLBACK_ALLOW_PRIVATE_NETWORKS: bool(false),
  // One partner callback attempt, DNS to response; the delivery activity's own timeout is 1 minute.
  CALLBACK_TIMEOUT_MS: int(10_000, 100).refine((v) => v <= 30_000, 'must be at most 30000'),
};
