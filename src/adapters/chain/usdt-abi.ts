import type { Abi } from 'viem';

// The slice of ERC-20 the service touches. Kept as a literal const so viem infers argument and event types;
// it matches both the real USDT on Arbitrum One and contracts/TestUSDT.sol.
export const USDT_ABI = [
  {
    type: 'function',
    name: 'transfer',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'to', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    outputs: [{ name: '', type: 'bool' }],
  },
  {
    type: 'function',
    name: 'balanceOf',
    stateMutability: 'view',
    inputs: [{ name: 'account', type: 'address' }],
    outputs: [{ name: '', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'decimals',
    stateMutability: 'view',
    inputs: [],
    outputs: [{ name: '', type: 'uint8' }],
  },
  {
    type: 'event',
    name: 'Transfer',
    anonymous: false,
    inputs: [
      { name: 'from', type: 'address', indexed: true },
      { name: 'to', type: 'address', indexed: true },
      { name: 'value', type: 'uint256', indexed: false },
    ],
  },
] as const satisfies Abi;

export const TRANSFER_EVENT = USDT_ABI[3];

/** USDT0's issuer blocklist (and the test token's): a blocked wallet cannot send. Not every USDT has it. */
export const IS_BLOCKED_ABI = [
  {
    type: 'function',
    name: 'isBlocked',
    stateMutability: 'view',
    inputs: [{ name: 'account', type: 'address' }],
    outputs: [{ name: '', type: 'bool' }],
  },
] as const satisfies Abi;
