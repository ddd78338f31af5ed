/**
 * Receiver screening (docs/decisions.md D45): the wallet a payout pays is checked against the token
 * issuer's blocklist, a sanctions oracle and the operators' denylist, at POST and again right before
 * the USDT is requested or signed. A transfer TO a wallet the issuer blocked succeeds on chain, and the
 * issuer can then burn it, so the chain itself never refuses what screening must.
 */

export const SCREENING_SOURCES = ['token_blocklist', 'sanctions_oracle', 'denylist'] as const;
export type ScreeningSource = (typeof SCREENING_SOURCES)[number];

export type ScreeningVerdict =
  | { kind: 'clear' }
  /** Listed by `source`; `detail` is for operators and logs, never for the partner. */
  | { kind: 'flagged'; source: ScreeningSource; detail: string };

/** The narrow interface the api and the worker screen through. */
export interface ReceiverScreening {
  /**
   * The verdict of every enabled source. Throws `ScreeningUnavailableError` when a source that could
   * flag the wallet cannot be read and none flagged it: an unknown, never a verdict.
   */
  screen(wallet: string): Promise<ScreeningVerdict>;
}

/** A source that could not be read: the request or step that needed it waits or is retried. */
export class ScreeningUnavailableError extends Error {
  override name = 'ScreeningUnavailableError';
  constructor(
    readonly sources: ScreeningSource[],
    message: string,
  ) {
    super(message);
  }
}

/** Several flags at once: the issuer's block is reported first (its message is the one partners may see). */
export function firstFlag(
  flags: Extract<ScreeningVerdict, { kind: 'flagged' }>[],
): Extract<ScreeningVerdict, { kind: 'flagged' }> | undefined {
  return flags.find((f) => f.source === 'token_blocklist') ?? flags[0];
}
