/**
 * Every activity option set of the workflows, named once: how long an attempt may take, how it is
 * retried, and what ends the retries. Workflows pick a set per kind of step.
 */
import {
  ActivityCancellationType,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import { CHAIN_REJECTED, PROVIDER_REJECTED } from '../activities/failure-types';

/**
 * An operator's decision cancels the step that waits for proof; a running attempt is then waited for,
 * not abandoned, so an answer it got (a confirmed transfer it claimed, a payment on the charge) is seen
 * and wins over the decision. Set explicitly: left unset, the SDK's command defaults to TRY_CANCEL.
 */
const SEE_THE_ANSWER = ActivityCancellationType.WAIT_CANCELLATION_COMPLETED;

/** Quick bookkeeping (read model, refund cases, alerts): retried until the database answers. */
export const BOOKKEEPING: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
};

/**
 * A refund's calls to the provider (docs/decisions.md D62): retried as long as it takes, never failed,
 * since a return is never given up on without the provider's own answer; the backoff caps at 5
 * minutes and RefundReturningTooLong tells an operator when it lasts.
 */
export const REFUND_PROVIDER: ActivityOptions = {
  // Twice the provider client's default timeout: a worker that died mid-call is replaced soon.
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '2 seconds', maximumInterval: '5 minutes' },
};

/** The PIX charge must exist soon after POST, or the partner is better told it failed. */
export const CHARGE_CREATION: ActivityOptions = {
  startToCloseTimeout: '20 seconds',
  scheduleToCloseTimeout: '2 minutes',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '10 seconds',
    nonRetryableErrorTypes: [PROVIDER_REJECTED],
  },
};

/**
 * The charge's status at expiry: retried as long as it takes (a payout whose payment is only known to
 * the provider must not fail over an outage), except for a final refusal.
 */
export const CHARGE_RECONCILIATION: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  cancellationType: SEE_THE_ANSWER,
  retry: {
    initialInterval: '2 seconds',
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: [PROVIDER_REJECTED],
  },
};

/**
 * The partner's cancel, asked of the provider while the partner waits: bounded, so that an outage
 * answers the partner (503, try again) instead of holding the payout's payments and expiry with it.
 */
export const CHARGE_CANCEL: ActivityOptions = {
  ...CHARGE_RECONCILIATION,
  scheduleToCloseTimeout: '1 minute',
};

/**
 * A notification behind a webhook token: a provider outage must lose nothing, so the fetch is retried
 * for as long as it takes. Only an event the provider cannot describe within its contract ends it.
 */
export const NOTIFICATION_FETCH: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '5 minutes',
    nonRetryableErrorTypes: [PROVIDER_REJECTED],
  },
};

/**
 * One round of a treasury send or confirmation: retried for a few minutes, then the workflow reads
 * what the round last failed with (a treasury that cannot send, a nonce gap), raises the matching
 * attention item, and starts another round. Rounds never end the payout: once a transaction is signed
 * it may be in a mempool, so giving up on a timeout could fail a payout whose USDT still arrives. Only
 * a refusal for good does. An empty or blocked treasury is retried until it can send again. Each
 * attempt is a few RPC calls; a short start-to-close gets a crashed worker's attempt retried soon.
 */
export const TREASURY_ROUND: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '5 minutes',
  cancellationType: SEE_THE_ANSWER,
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 1.5,
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: [CHAIN_REJECTED],
  },
};

/**
 * One look of a treasury wait that has lasted past its burst of rounds (src/domain/long-waits.ts):
 * a single attempt, the workflow pausing between looks. Same attempt, same refusals as a round.
 */
export const TREASURY_LOOK: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  cancellationType: SEE_THE_ANSWER,
  retry: { maximumAttempts: 1, nonRetryableErrorTypes: [CHAIN_REJECTED] },
};

/** One try, no retry: the caller decides what follows a failure. */
export const SINGLE_LOCAL_ATTEMPT: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  cancellationType: SEE_THE_ANSWER,
  retry: { maximumAttempts: 1 },
};

/**
 * One round of a step that waits for proof (the settlement request until accepted or refused, a
 * transfer until confirmed or reverted, the provider's settlement status): retried for a few minutes,
 * then the workflow looks at what else it learned (a webhook, a newer transaction hash) and starts
 * another round. Rounds never end the payout: only a refusal or a proof does.
 */
export const PROOF_ROUND: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  cancellationType: SEE_THE_ANSWER,
  scheduleToCloseTimeout: '5 minutes',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 1.5,
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: [PROVIDER_REJECTED, CHAIN_REJECTED],
  },
};

/**
 * The receiver's screening right before money moves: a read of the chain and the database, retried
 * for as long as a source cannot be read (the payout waits with an attention item, never assumes
 * clear). Cancelled at once by an operator's decision: it acts on nothing.
 */
export const SCREENING: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
};

/**
 * The receiver screened again between rounds of a step that keeps asking (the settlement request
 * during a provider outage): bounded like a proof round, so an unreadable source becomes a fact the
 * step weighs with the reports it waits on, instead of holding them behind an endless retry.
 */
export const SCREENING_ROUND: ActivityOptions = {
  ...SCREENING,
  scheduleToCloseTimeout: '5 minutes',
};

/**
 * One activity is one partner-callback POST. The backoff between POSTs lives in the callback workflow
 * rather than in this retry policy, so every attempt is its own visible step and the give-up an
 * explicit outcome; these retries only cover the worker side (a crash, an unreachable database).
 * CALLBACK_TIMEOUT_MS is capped well under the timeout.
 */
export const CALLBACK_POST: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds', maximumAttempts: 3 },
};

/**
 * The same options for a step run as a local activity. Its first attempt runs at once in the worker;
 * every retry after a backoff longer than a second waits on a durable timer instead of in the
 * worker's memory (the SDK's default keeps backoffs up to a minute in memory), so a retried step is
 * visible in the history, survives a worker restart, and passes in time-skipping tests like a remote
 * activity's retry.
 */
export function asLocal(options: ActivityOptions): LocalActivityOptions {
  const { startToCloseTimeout, scheduleToCloseTimeout, retry, cancellationType } = options;
  return {
    startToCloseTimeout,
    scheduleToCloseTimeout,
    retry,
    cancellationType,
    localRetryThreshold: '1 second',
  };
}
