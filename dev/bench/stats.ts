/** Latency samples and closed-loop load, shared by every bench phase. */

export interface Summary {
  count: number;
  errors: number;
  /** Completed operations per second over the measured window. */
  throughput: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function summarize(latenciesMs: readonly number[], errors: number, windowMs: number): Summary {
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  return {
    count: sorted.length,
    errors,
    throughput: windowMs > 0 ? (sorted.length * 1000) / windowMs : 0,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1]! : NaN,
  };
}

export interface ClosedLoopOptions {
  concurrency: number;
  durationMs: number;
  /** Operations started before this are run but not counted (connection set-up, JIT, caches). */
  warmupMs?: number;
  /** Stop early once this many operations were measured (e.g. a bounded set of ids). */
  maxOperations?: number;
  /**
   * Called when the measured window opens (the warm-up is over) and when it closes (the last client
   * stopped starting operations, or the run ended early): counters sampled there cover the window alone.
   */
  window?: { opened(): void; closed(): void };
}

/**
 * C clients, each starting its next operation as soon as the previous one ends (a closed loop: the
 * offered load adapts to the latency, as real clients waiting for answers do). `op` gets the client
 * index and returns the latency to record, or throws (counted as an error, not as a latency).
 */
export async function closedLoop(
  opts: ClosedLoopOptions,
  op: (client: number, seq: number) => Promise<number | void>,
): Promise<Summary & { firstError?: string }> {
  const warmupMs = opts.warmupMs ?? 0;
  const start = performance.now();
  const measureFrom = start + warmupMs;
  const stopAt = measureFrom + opts.durationMs;
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let seq = 0;
  let lastEnd = measureFrom;
  let windowOpen = false;
  const openWindow = setTimeout(() => {
    windowOpen = true;
    opts.window?.opened();
  }, warmupMs);
  const closeWindow = setTimeout(() => {
    if (windowOpen) opts.window?.closed();
    windowOpen = false;
  }, warmupMs + opts.durationMs);
  const client = async (index: number) => {
    while (performance.now() < stopAt) {
      if (opts.maxOperations !== undefined && latencies.length + errors >= opts.maxOperations) return;
      const began = performance.now();
      try {
        const reported = await op(index, seq++);
        const ended = performance.now();
        if (began >= measureFrom) {
          latencies.push(typeof reported === 'number' ? reported : ended - began);
          lastEnd = Math.max(lastEnd, ended);
        }
      } catch (err) {
        if (began >= measureFrom) errors += 1;
        firstError ??= err instanceof Error ? err.message : String(err);
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, (_, i) => client(i)));
  clearTimeout(openWindow);
  clearTimeout(closeWindow);
  if (windowOpen) opts.window?.closed();
  // Throughput over the window in which measured operations ran (a bounded run may end early).
  const windowMs = Math.max(1, Math.min(stopAt, lastEnd) - measureFrom);
  return { ...summarize(latencies, errors, windowMs), ...(firstError ? { firstError } : {}) };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
