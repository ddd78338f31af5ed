import {
  toPayoutResponse,
  type PayoutRecord,
  type PayoutResponse,
  type PayoutStatus,
  type SettlementNetwork,
} from './payout';

/** Partner callbacks (docs/decisions.md D22): one event per terminal payout. */
export const CALLBACK_EVENTS = ['payout.completed', 'payout.failed'] as const;
export type CallbackEvent = (typeof CALLBACK_EVENTS)[number];

export interface CallbackBody {
  event: CallbackEvent;
  payout: PayoutResponse;
}

/** The event a payout in this status announces; none for a payout still under way. */
export function callbackEventFor(status: PayoutStatus): CallbackEvent | null {
  if (status === 'COMPLETED') return 'payout.completed';
  if (status === 'FAILED') return 'payout.failed';
  return null;
}

/**
 * Derived from payout and event rather than drawn at random: a payout reaches one terminal state
 * once, so the id is unique, and it stays the same however the delivery is restarted, which is
 * what lets partners de-duplicate on it.
 */
export function callbackEventId(payoutId: string, event: CallbackEvent): string {
  return `evt_${payoutId}_${event === 'payout.completed' ? 'completed' : 'failed'}`;
}

export function callbackWorkflowId(payoutId: string, event: CallbackEvent): string {
  return `callback-${payoutId}-${event}`;
}

/**
 * The exact bytes that are signed and sent: the same for every attempt of an event (the payout as it
 * ended, on the configured network), so only the signature's timestamp changes.
 */
export function callbackBody(event: CallbackEvent, payout: PayoutRecord, network: SettlementNetwork): string {
  const body: CallbackBody = { event, payout: toPayoutResponse(payout, network) };
  return JSON.stringify(body);
}

export interface CallbackRetryPolicy {
  /** Wait after the first failed attempt. */
  initialIntervalMs: number;
  backoffCoefficient: number;
  maximumIntervalMs: number;
  /** Measured from the start of delivery; one last attempt is made when it runs out. */
  giveUpAfterMs: number;
}

/**
 * 10 s doubling to an hourly retry: a partner's brief blip is bridged within a minute, a long
 * outage costs about one request an hour, 33 attempts over the 24 h of docs/decisions.md D22.
 */
export const DEFAULT_CALLBACK_RETRY: CallbackRetryPolicy = {
  initialIntervalMs: 10_000,
  backoffCoefficient: 2,
  maximumIntervalMs: 3_600_000,
  giveUpAfterMs: 24 * 3_600_000,
};

/** Wait after failed attempt number `attempt` (1-based), before the deadline is applied. */
export function callbackRetryDelayMs(attempt: number, policy: CallbackRetryPolicy): number {
  const exponential = policy.initialIntervalMs * policy.backoffCoefficient ** Math.max(0, attempt - 1);
  return Math.min(policy.maximumIntervalMs, exponential);
}

/**
 * Offsets from the start of delivery at which attempts are made when every attempt fails
 * instantly: what operators and tests can expect of a partner that never answers 2xx.
 */
export function callbackAttemptSchedule(policy: CallbackRetryPolicy): number[] {
  const offsets = [0];
  let at = 0;
  for (let attempt = 1; at < policy.giveUpAfterMs; attempt++) {
    at = Math.min(policy.giveUpAfterMs, at + callbackRetryDelayMs(attempt, policy));
    offsets.push(at);
  }
  return offsets;
}

/** Retry settings a caller may override (tests shorten them); anything unusable is refused. */
export function resolveCallbackRetry(overrides: Partial<CallbackRetryPolicy> = {}): CallbackRetryPolicy {
  const policy = { ...DEFAULT_CALLBACK_RETRY, ...overrides };
  const positive = (v: number) => Number.isFinite(v) && v > 0;
  if (
    !positive(policy.initialIntervalMs) ||
    !positive(policy.maximumIntervalMs) ||
    !positive(policy.giveUpAfterMs) ||
    !(Number.isFinite(policy.backoffCoefficient) && policy.backoffCoefficient >= 1)
  ) {
    throw new RangeError(`invalid callback retry policy ${JSON.stringify(policy)}`);
  }
  return policy;
}
