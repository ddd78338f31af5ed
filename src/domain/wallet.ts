import { checksumAddress } from 'viem';

/**
 * The receiver_wallet rules of docs/decisions.md D8. Single-case hex carries no checksum, so it is
 * taken as typed; mixed case claims an EIP-55 checksum, and a wrong one means a mistyped address,
 * which must not receive funds.
 */

const ADDRESS_PATTERN = /^0x[0-9a-fA-F]{40}$/;
/** USDT sent there is burnt, and a zero address is usually a placeholder left in a form. */
export const ZERO_ADDRESS = `0x${'0'.repeat(40)}`;

export function receiverWalletError(input: string): string | undefined {
  if (!ADDRESS_PATTERN.test(input))
    return 'receiver_wallet must be an EVM address (0x followed by 40 hex digits)';
  if (input === ZERO_ADDRESS) return 'receiver_wallet must not be the zero address';
  const hex = input.slice(2);
  const singleCase = hex === hex.toLowerCase() || hex === hex.toUpperCase();
  if (!singleCase && checksumAddress(`0x${hex.toLowerCase()}`) !== input) {
    return 'receiver_wallet fails the EIP-55 checksum';
  }
  return undefined;
}

/** The EIP-55 form that responses carry; throws with the validation message on an invalid input. */
export function checksumWallet(input: string): `0x${string}` {
  const error = receiverWalletError(input);
  if (error) throw new Error(error);
  return checksumAddress(`0x${input.slice(2).toLowerCase()}`);
}
