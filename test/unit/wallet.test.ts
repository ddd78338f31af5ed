import fc from 'fast-check';

import { checksumWallet, receiverWalletError } from '../../src/domain/wallet';

const FORMAT = 'receiver_wallet must be an EVM address (0x followed by 40 hex digits)';
const CHECKSUM = 'receiver_wallet fails the EIP-55 checksum';
const ZERO = 'receiver_wallet must not be the zero address';

// The test vectors of EIP-55 itself, all of them correctly checksummed.
const EIP55_VECTORS = [
  '0x52908400098527886E0F7030069857D2E4169EE7',
  '0x8617E340B3D01FA5F11F306F4090FD50E238070D',
  '0xde709f2102306220921060314715629080e2fb77',
  '0x27b1fdb04752bbc536007a920d24acb045561c26',
  '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
  '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
  '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB',
  '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb',
];

function isSingleCase(address: string): boolean {
  const hex = address.slice(2);
  return hex === hex.toLowerCase() || hex === hex.toUpperCase();
}

/** Swaps the case of the first letter at or after `from`, or undefined if there is none. */
function flipOneLetter(address: string, from = 2): string | undefined {
  for (let i = Math.max(from, 2); i < address.length; i += 1) {
    const ch = address[i]!;
    if (/[a-fA-F]/.test(ch)) {
      const flipped = ch === ch.toLowerCase() ? ch.toUpperCase() : ch.toLowerCase();
      return address.slice(0, i) + flipped + address.slice(i + 1);
    }
  }
  return undefined;
}

describe('receiverWalletError', () => {
  it.each(EIP55_VECTORS)('accepts the EIP-55 vector %s', (address) => {
    expect(receiverWalletError(address)).toBeUndefined();
  });

  it.each([
    ['all lower case', '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed'],
    ['all upper case', '0x5AAEB6053F3E94C9B9A09F33669435E7EF1BEAED'],
    ['digits only', '0x1234567890123456789012345678901234567890'],
    ['one non-zero digit', '0x0000000000000000000000000000000000000001'],
  ])('accepts %s', (_case, address) => {
    expect(receiverWalletError(address)).toBeUndefined();
  });

  it.each([
    ['empty', ''],
    ['0x only', '0x'],
    ['no prefix', '5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'],
    ['upper-case prefix', '0X5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'],
    ['39 hex digits', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe'],
    ['41 hex digits', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed0'],
    ['a non-hex digit', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeg'],
    ['leading space', ' 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'],
    ['trailing space', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed '],
    ['trailing newline', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed\n'],
    ['a 32-byte hash', `0x${'ab'.repeat(32)}`],
    ['an ENS name', 'vitalik.eth'],
    ['full-width digits', '0x５aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe'],
  ])('refuses %s as not an address', (_case, input) => {
    expect(receiverWalletError(input)).toBe(FORMAT);
  });

  it.each([['the zero address', '0x0000000000000000000000000000000000000000']])(
    'refuses %s',
    (_case, input) => {
      expect(receiverWalletError(input)).toBe(ZERO);
    },
  );

  it.each(EIP55_VECTORS.filter((a) => !isSingleCase(a)))(
    'refuses %s with one letter of the wrong case',
    (address) => {
      expect(receiverWalletError(flipOneLetter(address)!)).toBe(CHECKSUM);
    },
  );

  it('accepts every checksummed, lower-case and upper-case form of a random address', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 20, maxLength: 20 }), (bytes) => {
        const lower = `0x${Buffer.from(bytes).toString('hex')}`;
        if (/^0x0{40}$/.test(lower)) return;
        const upper = `0x${lower.slice(2).toUpperCase()}`;
        const checksummed = checksumWallet(lower);
        for (const form of [lower, upper, checksummed]) {
          expect(receiverWalletError(form)).toBeUndefined();
          expect(checksumWallet(form)).toBe(checksummed);
        }
      }),
    );
  });

  it('refuses a checksummed address with any one letter of the wrong case, unless it became single-case', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 20, maxLength: 20 }), fc.nat({ max: 41 }), (bytes, from) => {
        const checksummed = checksumWallet(
          `0x${Buffer.from(bytes)
            .toString('hex')
            .replace(/^0{40}$/, '1'.repeat(40))}`,
        );
        const mutated = flipOneLetter(checksummed, from);
        if (mutated === undefined) return;
        expect(receiverWalletError(mutated)).toBe(isSingleCase(mutated) ? undefined : CHECKSUM);
      }),
    );
  });

  it('returns undefined or one of the three messages for any input', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^0x[0-9a-fA-F]{38,42}$/)), (input) => {
        expect([undefined, FORMAT, CHECKSUM, ZERO]).toContain(receiverWalletError(input));
      }),
    );
  });
});

describe('checksumWallet', () => {
  it.each([
    ['0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'],
    ['0x5AAEB6053F3E94C9B9A09F33669435E7EF1BEAED', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'],
    ['0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'],
    ['0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359', '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359'],
  ])('%s is returned as %s', (input, checksummed) => {
    expect(checksumWallet(input)).toBe(checksummed);
  });

  it.each([
    ['not-an-address', FORMAT],
    ['0x0000000000000000000000000000000000000000', ZERO],
    ['0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD', CHECKSUM],
  ])('throws on %s with the validation message', (input, text) => {
    expect(() => checksumWallet(input)).toThrow(new Error(text));
  });
});
