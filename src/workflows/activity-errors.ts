import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';
import { CHAIN_REJECTED, PROVIDER_REJECTED } from '../activities/failure-types';

/**
 * An activity gave up: a remote one's failure arrives wrapped in ActivityFailure, a local one's as
 * its cause (ApplicationFailure, or TimeoutFailure when it ran out of time).
 */
export function isActivityError(err: unknown): boolean {
  return err instanceof ActivityFailure || err instanceof ApplicationFailure || err instanceof TimeoutFailure;
}

/** A refusal the activity marked as final, as opposed to running out of time or attempts. */
export function isRefusal(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return (
    cause instanceof ApplicationFailure &&
    (cause.nonRetryable || cause.type === PROVIDER_REJECTED || cause.type === CHAIN_REJECTED)
  );
}

/**
 * The last application failure in the chain: what the activity itself last said, also when its
 * retries ran out of time (the timeout wraps it).
 */
export function lastApplicationFailure(err: unknown): ApplicationFailure | undefined {
  for (let e: unknown = err; e instanceof Error; e = (e as { cause?: unknown }).cause) {
    if (e instanceof ApplicationFailure) return e;
  }
  return undefined;
}
