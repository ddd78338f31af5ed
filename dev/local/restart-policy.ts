/**
 * When the launcher restarts a crashed service: at once-ish the first time, then backing off so a
 * service that crashes on start does not spin, and from scratch again after it ran long enough to
 * count as healthy (a crash an hour later is a new incident, not the tenth in a row).
 */
export const RESTART_BACKOFF_MS = { first: 1_000, max: 30_000, healthyAfter: 60_000 } as const;

/** The pause before restarting a service that ran `ranForMs` and was due a `scheduledMs` pause. */
export function restartDelay(scheduledMs: number, ranForMs: number): number {
  return ranForMs > RESTART_BACKOFF_MS.healthyAfter ? RESTART_BACKOFF_MS.first : scheduledMs;
}

/** The pause to schedule for the crash after one that waited `delayMs`. */
export function nextRestartDelay(delayMs: number): number {
  return Math.min(delayMs * 2, RESTART_BACKOFF_MS.max);
}
