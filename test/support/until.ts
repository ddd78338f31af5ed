export interface UntilOptions {
  /** How long to wait before failing with `what`. Default 60 s. */
  timeoutMs?: number;
  /** Pause between probes. Default 50 ms. */
  intervalMs?: number;
  /**
   * Errors are expected meanwhile (a server restarting): keep probing, and name the last one if time
   * runs out. Without it, a probe that throws ends the wait at once with its error.
   */
  retryErrors?: boolean;
}

/**
 * Polls `probe` until it returns a value (anything but undefined): how every test waits on an
 * observable event instead of sleeping. A probe throws to stop at once (a forbidden state reached,
 * a process that died), so a wait never outlasts what it waits for. `what` names the event in the
 * timeout's message (a function: computed then, e.g. with the last state seen).
 */
export async function until<T>(
  what: string | (() => string),
  probe: () => Promise<T | undefined> | T | undefined,
  opts: UntilOptions = {},
): Promise<T> {
  const { timeoutMs = 60_000, intervalMs = 50, retryErrors = false } = opts;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      if (!retryErrors) throw err;
      lastError = err;
    }
    if (Date.now() > deadline) {
      const cause = lastError === undefined ? '' : ` (last error: ${String(lastError)})`;
      const waitedFor = typeof what === 'string' ? what : what();
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${waitedFor}${cause}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
