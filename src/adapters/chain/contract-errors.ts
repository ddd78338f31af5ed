import { BaseError, ContractFunctionRevertedError, ContractFunctionZeroDataError } from 'viem';

/**
 * The contract answered, but not with the function: no code there, or a revert (no such selector).
 * What a start check reports as a setting pointing at the wrong contract, apart from a node that
 * does not answer.
 */
export function isMissingFunction(err: unknown): boolean {
  if (!(err instanceof BaseError)) return false;
  return (
    err.walk(
      (e) => e instanceof ContractFunctionZeroDataError || e instanceof ContractFunctionRevertedError,
    ) !== null
  );
}

/** viem's one-line message (its full message carries the request, the docs link and the version). */
export function shortError(err: unknown): string {
  if (err instanceof BaseError) return err.shortMessage;
  return err instanceof Error ? err.message : String(err);
}
