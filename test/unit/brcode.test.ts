import fc from 'fast-check';
// An independent implementation (npm pix-utils), to show that other PIX software reads our codes
// and that we read theirs. Its CRC module is not re-exported from the package root.
import { createStaticPix, hasError, isDynamicPix, isStaticPix, parsePix } from 'pix-utils';
import { computeCRC } from 'pix-utils/dist/main/crc';

import {
  BrCodeError,
  crc16ccitt,
  encodeBrCode,
  encodeDynamicBrCode,
  parseBrCode,
  type BrCodeInput,
  type ParsedBrCode,
} from '../../src/domain/brcode';

// Examples of the Banco Central "Manual de Padrões para Iniciação do Pix" (static key 123e4567-...,
// dynamic URL, composite), of the BR Code manual (several arrangements) and of pix-utils' README.
const BCB_STATIC =
  '00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D';
const BCB_DYNAMIC =
  '00020101021226700014br.gov.bcb.pix2548pix.example.com/8b3da2f39a4140d1a91abd93113bd4415204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***630464E4';
const BCB_COMPOSITE =
  '00020101021226700014br.gov.bcb.pix2548pix.example.com/8b3da2f39a4140d1a91abd93113bd4415204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***80740014br.gov.bcb.pix2552pix.example.com/rec/2353c790eefb11eaadc10242ac1200026304FB42';
const BRCODE_MANUAL =
  '00020104141234567890123426580014BR.GOV.BCB.PIX0136123e4567-e12b-12d1-a456-42665544000027300012BR.COM.OUTRO011001234567895204000053039865406123.455802BR5917NOME DO RECEBEDOR6008BRASILIA61087007490062190515RP12345678-201980390012BR.COM.OUTRO01190123.ABCD.3456.WXYZ6304AD38';
const PIX_UTILS_STATIC =
  '00020126650014br.gov.bcb.pix0119nubank@thalesog.com0220Gerado por Pix-Utils52040000530398654041.005802BR5914Thales Ogliari6009Sao Paulo62070503***63046069';
const PIX_UTILS_DYNAMIC =
  '00020126540014br.gov.bcb.pix2532https://pix.thalesogliari.com.br5204000053039865802BR5914Thales Ogliari6009SAO PAULO62070503***63043FD3';

/** A TLV field, built here independently of the module under test. */
const f = (id: string, value: string) => `${id}${String([...value].length).padStart(2, '0')}${value}`;
/** Closes a body with field 63 and a CRC from pix-utils, not from the module under test. */
const withCrc = (body: string) => `${body}6304${computeCRC(`${body}6304`)}`;

const PIX_ACCOUNT = f('26', f('00', 'br.gov.bcb.pix') + f('01', 'fulano@example.com'));
const COMMON_TAIL =
  f('52', '0000') + f('53', '986') + f('58', 'BR') + f('59', 'Fulano') + f('60', 'BRASILIA');

function brCodeErrorOf(run: () => unknown): BrCodeError {
  try {
    run();
  } catch (error) {
    if (error instanceof BrCodeError) return error;
    throw error;
  }
  throw new Error('expected a BrCodeError, nothing was thrown');
}

describe('crc16ccitt', () => {
  it.each([
    ['123456789', '29B1'], // the CRC-16/CCITT-FALSE check value
    ['', 'FFFF'],
    ['A', 'B915'],
    [BCB_STATIC.slice(0, -4), '1D3D'],
    [BCB_DYNAMIC.slice(0, -4), '64E4'],
  ])('of %p is %s', (payload, crc) => {
    expect(crc16ccitt(payload)).toBe(crc);
  });

  it('agrees with pix-utils on any string', () => {
    fc.assert(
      fc.property(
        // pix-utils drops a trailing 6304xxxx before computing; keep such strings out.
        fc.string({ unit: 'binary', maxLength: 300 }).filter((s) => !/6304\w{4}$/.test(s)),
        (payload) => {
          const crc = crc16ccitt(payload);
          expect(crc).toMatch(/^[0-9A-F]{4}$/);
          expect(crc).toBe(computeCRC(payload));
        },
      ),
    );
  });
});

describe('parseBrCode: known-good codes', () => {
  it.each<[string, string, ParsedBrCode]>([
    [
      'BCB static example',
      BCB_STATIC,
      {
        payloadFormatIndicator: '01',
        merchantAccount: { gui: 'br.gov.bcb.pix', key: '123e4567-e12b-12d1-a456-426655440000' },
        merchantCategoryCode: '0000',
        transactionCurrency: '986',
        countryCode: 'BR',
        merchantName: 'Fulano de Tal',
        merchantCity: 'BRASILIA',
        txid: '***',
        crc: '1D3D',
      },
    ],
    [
      'BCB dynamic example',
      BCB_DYNAMIC,
      {
        payloadFormatIndicator: '01',
        pointOfInitiationMethod: '12',
        merchantAccount: { gui: 'br.gov.bcb.pix', url: 'pix.example.com/8b3da2f39a4140d1a91abd93113bd441' },
        merchantCategoryCode: '0000',
        transactionCurrency: '986',
        countryCode: 'BR',
        merchantName: 'Fulano de Tal',
        merchantCity: 'BRASILIA',
        txid: '***',
        crc: '64E4',
      },
    ],
    [
      'BCB composite example (field 80 skipped)',
      BCB_COMPOSITE,
      {
        payloadFormatIndicator: '01',
        pointOfInitiationMethod: '12',
        merchantAccount: { gui: 'br.gov.bcb.pix', url: 'pix.example.com/8b3da2f39a4140d1a91abd93113bd441' },
        merchantCategoryCode: '0000',
        transactionCurrency: '986',
        countryCode: 'BR',
        merchantName: 'Fulano de Tal',
        merchantCity: 'BRASILIA',
        txid: '***',
        crc: 'FB42',
      },
    ],
    [
      'BR Code manual example (other arrangements, postal code, upper-case GUI)',
      BRCODE_MANUAL,
      {
        payloadFormatIndicator: '01',
        merchantAccount: { gui: 'BR.GOV.BCB.PIX', key: '123e4567-e12b-12d1-a456-426655440000' },
        merchantCategoryCode: '0000',
        transactionCurrency: '986',
        transactionAmount: '123.45',
        countryCode: 'BR',
        merchantName: 'NOME DO RECEBEDOR',
        merchantCity: 'BRASILIA',
        txid: 'RP12345678-2019',
        crc: 'AD38',
      },
    ],
    [
      'pix-utils README static code (with a description)',
      PIX_UTILS_STATIC,
      {
        payloadFormatIndicator: '01',
        merchantAccount: {
          gui: 'br.gov.bcb.pix',
          key: 'nubank@thalesog.com',
          description: 'Gerado por Pix-Utils',
        },
        merchantCategoryCode: '0000',
        transactionCurrency: '986',
        transactionAmount: '1.00',
        countryCode: 'BR',
        merchantName: 'Thales Ogliari',
        merchantCity: 'Sao Paulo',
        txid: '***',
        crc: '6069',
      },
    ],
    [
      'pix-utils README dynamic code',
      PIX_UTILS_DYNAMIC,
      {
        payloadFormatIndicator: '01',
        merchantAccount: { gui: 'br.gov.bcb.pix', url: 'https://pix.thalesogliari.com.br' },
        merchantCategoryCode: '0000',
        transactionCurrency: '986',
        countryCode: 'BR',
        merchantName: 'Thales Ogliari',
        merchantCity: 'SAO PAULO',
        txid: '***',
        crc: '3FD3',
      },
    ],
  ])('reads the %s', (_name, code, expected) => {
    expect(parseBrCode(code)).toEqual(expected);
  });

  it('accepts a lower-case CRC and reports it upper-case', () => {
    expect(parseBrCode(BCB_STATIC.replace(/1D3D$/, '1d3d')).crc).toBe('1D3D');
  });

  it('accepts a code without field 62 (no txid)', () => {
    const parsed = parseBrCode(withCrc(f('00', '01') + PIX_ACCOUNT + COMMON_TAIL));
    expect(parsed.txid).toBeUndefined();
  });

  it('accepts point of initiation 11 (reusable)', () => {
    const parsed = parseBrCode(withCrc(f('00', '01') + f('01', '11') + PIX_ACCOUNT + COMMON_TAIL));
    expect(parsed.pointOfInitiationMethod).toBe('11');
  });

  it('finds the PIX account in any of fields 26-51, past other arrangements', () => {
    const other = f('26', f('00', 'br.com.outro') + f('01', '0123456789'));
    const pix = f('51', f('00', 'br.gov.bcb.pix') + f('01', '+5511987654321'));
    const parsed = parseBrCode(withCrc(f('00', '01') + other + pix + COMMON_TAIL));
    expect(parsed.merchantAccount).toEqual({ gui: 'br.gov.bcb.pix', key: '+5511987654321' });
  });
});

describe('parseBrCode: refusals', () => {
  const account = (sub: string) => f('26', f('00', 'br.gov.bcb.pix') + sub);
  const good = f('00', '01') + PIX_ACCOUNT + COMMON_TAIL;
  it.each<[string, string, string]>([
    ['an empty string', '', 'code must end with the CRC field 63 (6304 + 4 hex digits)'],
    ['free text', 'pix copia e cola', 'code must end with the CRC field 63 (6304 + 4 hex digits)'],
    [
      'a boleto line',
      '10491443385511900000200000000141325230000093423',
      'code must end with the CRC field 63',
    ],
    ['a code cut short', BCB_STATIC.slice(0, -8), 'code must end with the CRC field 63'],
    ['a non-hex CRC', BCB_STATIC.replace(/1D3D$/, 'ZZZZ'), 'code must end with the CRC field 63'],
    [
      'a wrong CRC',
      BCB_STATIC.replace(/1D3D$/, '1D3E'),
      'CRC mismatch: the code says 1D3E, its content gives 1D3D',
    ],
    ['trailing whitespace', `${BCB_STATIC}\n`, 'code contains control characters'],
    ['a trailing space', `${BCB_STATIC} `, 'code must end with the CRC field 63'],
    ['a leading space', withCrc(` ${good}`), 'malformed field header " 000" at position 0 of the code'],
    [
      'a code over 512 characters',
      withCrc(good + f('80', 'x'.repeat(99)).repeat(5)),
      'code is longer than 512 characters',
    ],
    [
      'a non-numeric header',
      withCrc(`000X01${good}`),
      'malformed field header "000X" at position 0 of the code',
    ],
    ['a field running past the end', withCrc(`${good}6299`), 'field 62 of the code runs past its end'],
    ['a field swallowing the CRC', withCrc(`${good}8008`), 'field 63 (CRC) must come last'],
    ['a duplicated field', withCrc(good + f('59', 'Outro')), 'field 59 appears twice in the code'],
    [
      'field 00 not first',
      withCrc(PIX_ACCOUNT + f('00', '01') + COMMON_TAIL),
      'field 00 (payload format indicator) must come first',
    ],
    [
      'payload format 02',
      withCrc(f('00', '02') + PIX_ACCOUNT + COMMON_TAIL),
      'payload format indicator (00) must be "01"',
    ],
    [
      'point of initiation 13',
      withCrc(f('00', '01') + f('01', '13') + PIX_ACCOUNT + COMMON_TAIL),
      'point of initiation method (01) must be "11" or "12"',
    ],
    [
      'no merchant category code',
      withCrc(f('00', '01') + PIX_ACCOUNT + f('53', '986') + f('58', 'BR') + f('59', 'F') + f('60', 'C')),
      'missing field 52 (merchant category code)',
    ],
    [
      'a 3-digit merchant category code',
      withCrc(good.replace('52040000', '5203000')),
      'merchant category code (52) must be 4 digits',
    ],
    ['no currency', withCrc(good.replace('5303986', '')), 'missing field 53 (transaction currency)'],
    [
      'currency USD',
      withCrc(good.replace('5303986', '5303840')),
      'transaction currency (53) must be 986 (BRL)',
    ],
    ['no country', withCrc(good.replace('5802BR', '')), 'missing field 58 (country code)'],
    ['country AR', withCrc(good.replace('5802BR', '5802AR')), 'country code (58) must be "BR"'],
    ['no merchant name', withCrc(good.replace('5906Fulano', '')), 'missing field 59 (merchant name)'],
    [
      'an empty merchant name',
      withCrc(good.replace('5906Fulano', '5900')),
      'merchant name (59) must be 1-25 characters',
    ],
    [
      'a 26-character merchant name',
      withCrc(good.replace('5906Fulano', f('59', 'N'.repeat(26)))),
      'merchant name (59) must be 1-25 characters',
    ],
    ['no merchant city', withCrc(good.replace('6008BRASILIA', '')), 'missing field 60 (merchant city)'],
    [
      'a 16-character merchant city',
      withCrc(good.replace('6008BRASILIA', f('60', 'Presidente Prude'))),
      'merchant city (60) must be 1-15 characters',
    ],
    [
      'an amount with a comma',
      withCrc(good + f('54', '12,34')),
      'transaction amount (54) must be a decimal number with at most 2 places and 13 characters',
    ],
    ['an amount with 3 decimals', withCrc(good + f('54', '12.345')), 'transaction amount (54) must be'],
    ['a negative amount', withCrc(good + f('54', '-1.00')), 'transaction amount (54) must be'],
    [
      'an amount over 13 characters',
      withCrc(good + f('54', '12345678901.00')),
      'transaction amount (54) must be',
    ],
    [
      'a 26-character txid',
      withCrc(good + f('62', f('05', 'T'.repeat(26)))),
      'txid (62-05) must be 1-25 characters',
    ],
    [
      'malformed additional data',
      withCrc(good + f('62', '05')),
      'malformed field header "05" at position 0 of field 62',
    ],
    [
      'no merchant account',
      withCrc(f('00', '01') + COMMON_TAIL),
      'no PIX merchant account (a field 26-51 with GUI br.gov.bcb.pix)',
    ],
    [
      'another GUI only',
      withCrc(f('00', '01') + f('26', f('00', 'br.com.outro') + f('01', 'k')) + COMMON_TAIL),
      'no PIX merchant account',
    ],
    [
      'an account with neither key nor URL',
      withCrc(f('00', '01') + account('') + COMMON_TAIL),
      'field 26 must hold either a PIX key (01) or a URL (25)',
    ],
    [
      'an account with both key and URL',
      withCrc(f('00', '01') + account(f('01', 'k') + f('25', 'pix.example.com/x')) + COMMON_TAIL),
      'field 26 must hold either a PIX key (01) or a URL (25)',
    ],
    ['an empty key', withCrc(f('00', '01') + account('0100') + COMMON_TAIL), 'PIX key length is invalid'],
  ])('refuses %s', (_name, code, message) => {
    expect(brCodeErrorOf(() => parseBrCode(code)).message).toContain(message);
  });

  it('refuses field 63 anywhere but last', () => {
    // A correct CRC for a code whose 63 field is followed by more: the CRC then covers the tail.
    const body = `${good}6304ABCD${f('80', 'x')}`;
    expect(brCodeErrorOf(() => parseBrCode(withCrc(body))).message).toBe(
      'field 63 appears twice in the code',
    );
  });

  it('refuses a code with a control character even with a matching CRC', () => {
    expect(brCodeErrorOf(() => parseBrCode(withCrc(good.replace('Fulano', 'Ful\tno')))).message).toBe(
      'code contains control characters',
    );
  });
});

describe('encodeBrCode', () => {
  const base: BrCodeInput = {
    pixKey: 'fulano@example.com',
    merchantName: 'Pagamentos Exemplo',
    merchantCity: 'Sao Paulo',
    amount: '100.00',
    txid: 'PAYOUT123abc',
  };

  it('reproduces the BCB manual static example byte for byte', () => {
    const code = encodeBrCode({
      pixKey: '123e4567-e12b-12d1-a456-426655440000',
      merchantName: 'Fulano de Tal',
      merchantCity: 'BRASILIA',
      txid: '***',
    });
    expect(code).toBe(BCB_STATIC);
  });

  it.each<[string, BrCodeInput, string]>([
    [
      'amount and txid',
      base,
      '00020126400014br.gov.bcb.pix0118fulano@example.com5204000053039865406100.005802BR5918Pagamentos Exemplo6009Sao Paulo62160512PAYOUT123abc63041D99',
    ],
    [
      'a description and "***"',
      {
        ...base,
        merchantName: 'Fulano',
        merchantCity: 'BRASILIA',
        amount: '12.34',
        txid: '***',
        description: 'Payout 42 for João SA',
      },
      '00020126650014br.gov.bcb.pix0118fulano@example.com0221Payout 42 for Joao SA520400005303986540512.345802BR5906Fulano6008BRASILIA62070503***63047318',
    ],
  ])('writes the expected code with %s', (_name, input, expected) => {
    expect(encodeBrCode(input)).toBe(expected);
  });

  it('leaves field 54 out when there is no amount', () => {
    const { amount: _amount, ...rest } = base;
    const code = encodeBrCode(rest);
    expect(code).not.toContain('5406');
    expect(parseBrCode(code).transactionAmount).toBeUndefined();
  });

  it.each([
    ['São Paulo', 'Sao Paulo'],
    ['Brasília', 'Brasilia'],
    ['Florianópolis', 'Florianopolis'],
    ['Jaraguá do Sul', 'Jaragua do Sul'],
    ['MACEIÓ', 'MACEIO'],
    ['Açailândia', 'Acailandia'],
  ])('strips the accents of city %p to %p', (city, ascii) => {
    expect(parseBrCode(encodeBrCode({ ...base, merchantCity: city })).merchantCity).toBe(ascii);
  });

  it('strips accents of the merchant name too', () => {
    expect(
      parseBrCode(encodeBrCode({ ...base, merchantName: 'Câmbio & Pagamentos Ltda' })).merchantName,
    ).toBe('Cambio & Pagamentos Ltda');
  });

  it.each<[string, Partial<BrCodeInput>, string]>([
    ['an empty key', { pixKey: '' }, 'pixKey must be non-empty printable ASCII without spaces'],
    [
      'a key with a space',
      { pixKey: 'fulano @example.com' },
      'pixKey must be non-empty printable ASCII without spaces',
    ],
    [
      'a key with an accent',
      { pixKey: 'joão@example.com' },
      'pixKey must be non-empty printable ASCII without spaces',
    ],
    ['a 78-character key', { pixKey: 'k'.repeat(78) }, 'pixKey must be at most 77 characters'],
    ['an empty name', { merchantName: '' }, 'merchantName must not be empty'],
    ['a 26-character name', { merchantName: 'N'.repeat(26) }, 'merchantName must be at most 25 characters'],
    [
      'a name with a leading space',
      { merchantName: ' Fulano' },
      'merchantName must not start or end with whitespace',
    ],
    [
      'a name with an emoji',
      { merchantName: 'Fulano 🙂' },
      'merchantName has characters outside printable ASCII',
    ],
    [
      'a name with a newline',
      { merchantName: 'Ful\nano' },
      'merchantName has characters outside printable ASCII',
    ],
    ['a name in Greek', { merchantName: 'Φουλανο' }, 'merchantName has characters outside printable ASCII'],
    ['an empty city', { merchantCity: '' }, 'merchantCity must not be empty'],
    [
      'a 16-character city',
      { merchantCity: 'Presidente Prude' },
      'merchantCity must be at most 15 characters',
    ],
    [
      'a city with a trailing space',
      { merchantCity: 'Sao Paulo ' },
      'merchantCity must not start or end with whitespace',
    ],
    ['an amount without decimals', { amount: '100' }, 'amount must be a decimal with 2 places'],
    ['an amount with one decimal', { amount: '100.5' }, 'amount must be a decimal with 2 places'],
    ['an amount with 3 decimals', { amount: '100.005' }, 'amount must be a decimal with 2 places'],
    ['an amount with a comma', { amount: '100,00' }, 'amount must be a decimal with 2 places'],
    ['a negative amount', { amount: '-0.50' }, 'amount must be a decimal with 2 places'],
    ['an amount with a leading zero', { amount: '0100.00' }, 'amount must be a decimal with 2 places'],
    ['an amount over 13 characters', { amount: '12345678901.00' }, 'amount must be a decimal with 2 places'],
    ['a zero amount', { amount: '0.00' }, 'amount must be > 0'],
    ['an empty txid', { txid: '' }, 'txid must be 1-25 characters of [A-Za-z0-9], or "***"'],
    ['a txid with a dash', { txid: 'payout-42' }, 'txid must be 1-25 characters'],
    ['a 26-character txid', { txid: 'T'.repeat(26) }, 'txid must be 1-25 characters'],
    ['a txid of "**"', { txid: '**' }, 'txid must be 1-25 characters'],
    ['a description over 99', { description: 'd'.repeat(100) }, 'description must be at most 99 characters'],
    ['an empty description', { description: '' }, 'description must not be empty'],
    [
      'a key and description over field 26',
      { pixKey: 'k'.repeat(77), description: 'd'.repeat(10) },
      'pixKey and description together exceed the 99 characters of field 26',
    ],
  ])('refuses %s', (_name, change, message) => {
    expect(brCodeErrorOf(() => encodeBrCode({ ...base, ...change })).message).toContain(message);
  });
});

// ---------------------------------------------------------------------------------------------------
// Properties

const asciiText = (max: number) =>
  fc.stringMatching(new RegExp(`^[A-Za-z0-9](?:[A-Za-z0-9 .&'-]{0,${max - 2}}[A-Za-z0-9])?$`));
const pixKeys = fc.oneof(
  fc.stringMatching(/^[0-9]{11}$/),
  fc.stringMatching(/^[0-9]{14}$/),
  fc.stringMatching(/^\+55[0-9]{10,11}$/),
  fc.uuid(),
  fc.emailAddress().filter((e) => e.length <= 77),
);
const inputs: fc.Arbitrary<BrCodeInput> = fc
  .record(
    {
      pixKey: pixKeys,
      merchantName: asciiText(25),
      merchantCity: asciiText(15),
      amount: fc.bigInt({ min: 1n, max: 10n ** 12n - 1n }).map((c) => {
        const digits = c.toString().padStart(3, '0');
        return `${digits.slice(0, -2)}.${digits.slice(-2)}`;
      }),
      txid: fc.oneof(fc.constant('***'), fc.stringMatching(/^[A-Za-z0-9]{1,25}$/)),
      description: asciiText(20),
    },
    { requiredKeys: ['pixKey', 'merchantName', 'merchantCity', 'txid'] },
  )
  // Field 26 holds at most 99: GUI (18) + key (4 + n) + description (4 + m).
  .filter((input) => input.description === undefined || input.pixKey.length + input.description.length <= 73);

describe('BR Code properties', () => {
  it('parse(encode(x)) gives x back', () => {
    fc.assert(
      fc.property(inputs, (input) => {
        const code = encodeBrCode(input);
        const parsed = parseBrCode(code);
        expect(parsed.merchantAccount).toEqual({
          gui: 'br.gov.bcb.pix',
          key: input.pixKey,
          ...(input.description === undefined ? {} : { description: input.description }),
        });
        expect(parsed.transactionAmount).toBe(input.amount);
        expect(parsed.txid).toBe(input.txid);
        expect(parsed.merchantName).toBe(input.merchantName);
        expect(parsed.merchantCity).toBe(input.merchantCity);
        expect(parsed.crc).toBe(code.slice(-4));
      }),
    );
  });

  it('pix-utils accepts every code we write and reads the same key, amount and txid', () => {
    fc.assert(
      fc.property(inputs, (input) => {
        const theirs = parsePix(encodeBrCode(input));
        if (hasError(theirs) || !isStaticPix(theirs))
          throw new Error(`pix-utils refused: ${JSON.stringify(theirs)}`);
        expect(theirs.pixKey).toBe(input.pixKey);
        expect(theirs.transactionAmount).toBe(input.amount === undefined ? 0 : Number(input.amount));
        expect(theirs.txid).toBe(input.txid);
        expect(theirs.merchantName).toBe(input.merchantName);
        expect(theirs.merchantCity).toBe(input.merchantCity);
        expect(theirs.infoAdicional).toBe(input.description);
      }),
    );
  });

  it('we read every static code pix-utils writes', () => {
    fc.assert(
      fc.property(
        pixKeys,
        asciiText(25),
        asciiText(15),
        fc.integer({ min: 1, max: 99_999_999 }),
        fc.stringMatching(/^[A-Za-z0-9]{1,25}$/),
        (pixKey, merchantName, merchantCity, centavos, txid) => {
          const theirs = createStaticPix({
            pixKey,
            merchantName,
            merchantCity,
            transactionAmount: centavos / 100,
            txid,
          });
          if (hasError(theirs)) throw new Error(`pix-utils could not create: ${JSON.stringify(theirs)}`);
          const parsed = parseBrCode(theirs.toBRCode());
          expect(parsed.merchantAccount.key).toBe(pixKey);
          expect(parsed.transactionAmount).toBe((centavos / 100).toFixed(2));
          expect(parsed.txid).toBe(txid);
          // pix-utils upper-cases names and cities.
          expect(parsed.merchantName).toBe(merchantName.toUpperCase());
          expect(parsed.merchantCity).toBe(merchantCity.toUpperCase());
        },
      ),
    );
  });

  it('detects any single-character change of a code', () => {
    fc.assert(
      fc.property(inputs, fc.nat(), fc.integer({ min: 0x20, max: 0x7e }), (input, at, replacement) => {
        const code = encodeBrCode(input);
        const index = at % code.length;
        const original = code[index]!;
        const changed = String.fromCharCode(replacement);
        // A case change of a CRC hex letter is the same CRC (lower case is accepted).
        const sameCrc = index >= code.length - 4 && changed.toUpperCase() === original;
        fc.pre(changed !== original && !sameCrc);
        const mutated = code.slice(0, index) + changed + code.slice(index + 1);
        expect(() => parseBrCode(mutated)).toThrow(BrCodeError);
      }),
      { numRuns: 1000 },
    );
  });

  it('throws nothing but BrCodeError on arbitrary input', () => {
    const nearlyCodes = fc
      .tuple(fc.array(fc.tuple(fc.stringMatching(/^[0-9]{2}$/), fc.string({ maxLength: 30 }))), fc.boolean())
      .map(([fields, crc]) => {
        const body = fields.map(([id, value]) => f(id, value)).join('');
        return crc ? withCrc(body) : body;
      });
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), nearlyCodes), (text) => {
        try {
          parseBrCode(text);
        } catch (error) {
          expect(error).toBeInstanceOf(BrCodeError);
        }
      }),
      { numRuns: 1000 },
    );
  });
});

describe('encodeDynamicBrCode (the location field, 26-25)', () => {
  const LOCATION = 'pix.example.com/8b3da2f39a4140d1a91abd93113bd441';

  it('reproduces the BCB manual dynamic example byte for byte', () => {
    expect(
      encodeDynamicBrCode({ location: LOCATION, merchantName: 'Fulano de Tal', merchantCity: 'BRASILIA' }),
    ).toBe(BCB_DYNAMIC);
  });

  it('writes the location and no key, txid ***, single use, and the amount; parse reads them back', () => {
    const code = encodeDynamicBrCode({
      location: 'sandbox.pix.local/qr/v2/0123456789abcdef0123456789abcdef',
      merchantName: 'PIX SANDBOX PROVIDER',
      merchantCity: 'SAO PAULO',
      amount: '100.00',
    });
    const account =
      f('00', 'br.gov.bcb.pix') + f('25', 'sandbox.pix.local/qr/v2/0123456789abcdef0123456789abcdef');
    expect(code).toBe(
      withCrc(
        f('00', '01') +
          f('01', '12') +
          f('26', account) +
          f('52', '0000') +
          f('53', '986') +
          f('54', '100.00') +
          f('58', 'BR') +
          f('59', 'PIX SANDBOX PROVIDER') +
          f('60', 'SAO PAULO') +
          f('62', f('05', '***')),
      ),
    );
    expect(parseBrCode(code)).toMatchObject({
      pointOfInitiationMethod: '12',
      merchantAccount: {
        gui: 'br.gov.bcb.pix',
        url: 'sandbox.pix.local/qr/v2/0123456789abcdef0123456789abcdef',
      },
      transactionAmount: '100.00',
      txid: '***',
    });
    expect(parseBrCode(code).merchantAccount.key).toBeUndefined();
  });

  it('is read by pix-utils as a dynamic code with the same location', () => {
    const code = encodeDynamicBrCode({
      location: LOCATION,
      merchantName: 'Fulano',
      merchantCity: 'BRASILIA',
      amount: '5.00',
    });
    const parsed = parsePix(code);
    if (hasError(parsed) || !isDynamicPix(parsed)) throw new Error('pix-utils did not read a dynamic code');
    expect(parsed.url).toBe(LOCATION);
  });

  it.each([
    ['empty', ''],
    ['with a scheme', 'https://pix.example.com/qr/1'],
    ['with a space', 'pix.example.com/qr 1'],
    ['over 77 characters', `pix.example.com/${'a'.repeat(62)}`],
  ])('refuses a location %s', (_what, location) => {
    expect(
      brCodeErrorOf(() => encodeDynamicBrCode({ location, merchantName: 'Fulano', merchantCity: 'BRASILIA' }))
        .message,
    ).toMatch(/^location must/);
  });

  it('parse refuses an empty URL in 26-25', () => {
    const code = withCrc(f('00', '01') + f('26', f('00', 'br.gov.bcb.pix') + f('25', '')) + COMMON_TAIL);
    expect(brCodeErrorOf(() => parseBrCode(code)).message).toBe('URL (26-25) must not be empty');
  });

  it('detects any single-character change of a dynamic code', () => {
    const code = encodeDynamicBrCode({
      location: LOCATION,
      merchantName: 'Fulano',
      merchantCity: 'BRASILIA',
      amount: '10.00',
    });
    fc.assert(
      fc.property(fc.nat(code.length - 9), fc.constantFrom(...'0123456789abcdefXYZ./'), (at, char) => {
        fc.pre(code[at] !== char);
        const changed = code.slice(0, at) + char + code.slice(at + 1);
        expect(() => parseBrCode(changed)).toThrow(BrCodeError);
      }),
    );
  });
});
