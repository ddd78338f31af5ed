import fc from 'fast-check';

import {
  PIX_KEY_TYPES,
  normalizePixKey,
  normalizePixKeyType,
  pixKeyError,
  type PixKeyType,
} from '../../src/domain/pix-key';

const message = (type: PixKeyType) => `pix_key is not a valid ${type} key`;

describe('PIX_KEY_TYPES', () => {
  it('lists the five types of docs/api.md', () => {
    expect(PIX_KEY_TYPES).toEqual(['CPF', 'CNPJ', 'EMAIL', 'PHONE', 'RANDOM']);
  });
});

describe('normalizePixKeyType', () => {
  it.each([
    ['CPF', 'CPF'],
    ['cpf', 'CPF'],
    ['Cnpj', 'CNPJ'],
    ['email', 'EMAIL'],
    ['eMaIl', 'EMAIL'],
    ['PHONE', 'PHONE'],
    ['phone', 'PHONE'],
    ['random', 'RANDOM'],
    ['RANDOM', 'RANDOM'],
  ])('%p is %p', (input, type) => {
    expect(normalizePixKeyType(input)).toBe(type);
  });

  it.each([
    [''],
    ['EVP'],
    ['TELEFONE'],
    ['CPF '],
    [' cpf'],
    ['C P F'],
    ['CPF\n'],
    ['emaıl'], // dotless i: upper-cases to EMAIL, but is not the word
    ['ＣＰＦ'], // full-width letters
    ['RANDOM_KEY'],
  ])('%p is not a type', (input) => {
    expect(normalizePixKeyType(input)).toBeUndefined();
  });

  it('accepts every case mix of every type', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...PIX_KEY_TYPES),
        fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
        (type, flips) => {
          const mixed = [...type].map((ch, i) => (flips[i] ? ch.toLowerCase() : ch)).join('');
          expect(normalizePixKeyType(mixed)).toBe(type);
        },
      ),
    );
  });
});

describe('pixKeyError', () => {
  const valid: Array<[PixKeyType, string]> = [
    ['CPF', '12345678909'],
    ['CPF', '00000000000'],
    ['CNPJ', '11222333000181'],
    ['CNPJ', '00000000000000'],
    // Alphanumeric CNPJ: the Receita Federal's published example, then letters in either case.
    ['CNPJ', '12ABC34501DE35'],
    ['CNPJ', '12abc34501de35'],
    ['CNPJ', '12AbC34501dE35'],
    ['CNPJ', 'ZZZZZZZZZZZZ62'],
    ['CNPJ', 'A0000000000032'],
    ['EMAIL', 'fulano@example.com'],
    ['EMAIL', 'Fulano.De.Tal@Example.COM.br'],
    ['EMAIL', 'first.last+tag@sub.domain.example.org'],
    ['EMAIL', "o'brien_99@mail-server.io"],
    ['EMAIL', "!#$%&'*+/=?^_`{|}~-@example.com"],
    ['EMAIL', `${'a'.repeat(64)}@example.com`], // 76 characters
    ['EMAIL', `${'a'.repeat(64)}@examples.com`], // 77 characters, the DICT maximum
    ['EMAIL', 'a@b.co'],
    ['PHONE', '11987654321'],
    ['PHONE', '1133334444'],
    ['PHONE', '+5511987654321'],
    ['PHONE', '+551133334444'],
    ['RANDOM', '123e4567-e12b-12d1-a456-426655440000'],
    ['RANDOM', '123E4567-E12B-12D1-A456-426655440000'],
    ['RANDOM', 'bee05743-4291-4f3c-9259-595df1307ba1'],
    ['RANDOM', '00000000-0000-0000-0000-000000000000'],
  ];
  it.each(valid)('%s key %p is valid', (type, key) => {
    expect(pixKeyError(type, key)).toBeUndefined();
  });

  const invalid: Array<[PixKeyType, string]> = [
    ['CPF', ''],
    ['CPF', '1234567890'],
    ['CPF', '123456789090'],
    ['CPF', '123.456.789-09'],
    ['CPF', '1234567890a'],
    ['CPF', ' 12345678909'],
    ['CPF', '12345678909 '],
    ['CPF', '12345678909\n'],
    ['CPF', '１２３４５６７８９０９'], // full-width digits
    ['CPF', '٠١٢٣٤٥٦٧٨٩٠'], // Arabic-Indic digits
    ['CNPJ', '1122233300018'],
    ['CNPJ', '112223330001810'],
    ['CNPJ', '11.222.333/0001-81'],
    ['CNPJ', '12345678909'],
    ['CNPJ', 'AB222333000181'], // numeric check digits of another CNPJ
    ['CNPJ', '12ABC34501DE36'], // wrong second check digit
    ['CNPJ', '12ABC34501DE45'], // wrong first check digit
    ['CNPJ', '12ABC34501DE3A'], // a letter among the check digits
    ['CNPJ', '12ABC34501D\u00c935'], // É is not an ASCII letter
    ['CNPJ', '12.ABC.345/01DE-35'], // formatted
    ['CNPJ', '12ABC34501DE3'],
    ['CNPJ', '12ABC34501DE355'],
    ['CNPJ', ' 12ABC34501DE35'],
    ['EMAIL', ''],
    ['EMAIL', 'plainaddress'],
    ['EMAIL', '@example.com'],
    ['EMAIL', 'fulano@'],
    ['EMAIL', 'fulano@example'],
    ['EMAIL', 'fulano@@example.com'],
    ['EMAIL', 'ful@no@example.com'],
    ['EMAIL', '.fulano@example.com'],
    ['EMAIL', 'fulano.@example.com'],
    ['EMAIL', 'ful..ano@example.com'],
    ['EMAIL', 'ful ano@example.com'],
    ['EMAIL', '"fulano"@example.com'],
    ['EMAIL', 'fulano@-example.com'],
    ['EMAIL', 'fulano@example-.com'],
    ['EMAIL', 'fulano@exa_mple.com'],
    ['EMAIL', 'fulano@example..com'],
    ['EMAIL', 'fulano@.example.com'],
    ['EMAIL', 'fulano@example.com.'],
    ['EMAIL', 'fulano@example.c'],
    ['EMAIL', 'fulano@example.c0m'],
    ['EMAIL', 'fulano@[192.168.0.1]'],
    ['EMAIL', 'fulano@192.168.0.1'],
    ['EMAIL', 'joão@example.com'],
    ['EMAIL', ' fulano@example.com'],
    ['EMAIL', 'fulano@example.com '],
    ['EMAIL', `${'a'.repeat(65)}@example.com`], // local part over 64
    ['EMAIL', `${'a'.repeat(60)}@${'b'.repeat(13)}.com`], // 78 characters
    ['EMAIL', `a@${'b'.repeat(64)}.com`], // label over 63
    ['PHONE', ''],
    ['PHONE', '987654321'],
    ['PHONE', '119876543210'],
    ['PHONE', '+55987654321'],
    ['PHONE', '+55119876543210'],
    ['PHONE', '5511987654321'],
    ['PHONE', '55+11987654321'],
    ['PHONE', '+5411987654321'],
    ['PHONE', '+1 11987654321'],
    ['PHONE', '(11) 98765-4321'],
    ['PHONE', '11 98765 4321'],
    ['PHONE', '+55 11987654321'],
    ['PHONE', '11987654321 '],
    ['RANDOM', ''],
    ['RANDOM', '123e4567e12b12d1a456426655440000'],
    ['RANDOM', '{123e4567-e12b-12d1-a456-426655440000}'],
    ['RANDOM', '123e4567-e12b-12d1-a456-42665544000'],
    ['RANDOM', '123e4567-e12b-12d1-a456-4266554400000'],
    ['RANDOM', '123e4567-e12b-12d1-a456-42665544000g'],
    ['RANDOM', '123e4567-e12b12d1-a456-426655440000-'],
    ['RANDOM', ' 123e4567-e12b-12d1-a456-426655440000'],
    ['RANDOM', 'urn:uuid:123e4567-e12b-12d1-a456-426655440000'],
  ];
  it.each(invalid)('%s key %p is refused with the field-naming message', (type, key) => {
    expect(pixKeyError(type, key)).toBe(message(type));
  });

  it.each([
    ['CPF', 'pix_key is not a valid CPF key'],
    ['CNPJ', 'pix_key is not a valid CNPJ key'],
    ['EMAIL', 'pix_key is not a valid EMAIL key'],
    ['PHONE', 'pix_key is not a valid PHONE key'],
    ['RANDOM', 'pix_key is not a valid RANDOM key'],
  ] as const)('the %s message is exactly %p', (type, text) => {
    expect(pixKeyError(type, 'not a key')).toBe(text);
  });

  it('does not take a key of one type for another', () => {
    // A CPF is not a CNPJ, a phone number of 11 digits is also a CPF by format: the formats overlap.
    expect(pixKeyError('CNPJ', '12345678909')).toBe(message('CNPJ'));
    expect(pixKeyError('EMAIL', '12345678909')).toBe(message('EMAIL'));
    expect(pixKeyError('RANDOM', 'fulano@example.com')).toBe(message('RANDOM'));
    expect(pixKeyError('PHONE', '11222333000181')).toBe(message('PHONE'));
  });

  const digits = (n: number) => fc.stringMatching(new RegExp(`^[0-9]{${n}}$`));

  it.each([
    ['CPF', 11],
    ['CNPJ', 14],
  ] as const)('accepts any %s of %p digits and nothing else of other lengths', (type, n) => {
    fc.assert(fc.property(digits(n), (key) => expect(pixKeyError(type, key)).toBeUndefined()));
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9]{0,20}$/), (key) => {
        expect(pixKeyError(type, key) === undefined).toBe(key.length === n);
      }),
    );
  });

  it('accepts any 10 or 11 digit phone number, with or without +55', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.stringMatching(/^[0-9]{10,11}$/), (prefixed, number) => {
        expect(pixKeyError('PHONE', `${prefixed ? '+55' : ''}${number}`)).toBeUndefined();
      }),
    );
  });

  it('accepts any UUID, in either case', () => {
    fc.assert(
      fc.property(fc.uuid({ version: [1, 2, 3, 4, 5, 6, 7, 8] }), fc.boolean(), (uuid, upper) => {
        expect(pixKeyError('RANDOM', upper ? uuid.toUpperCase() : uuid)).toBeUndefined();
      }),
    );
  });

  it('accepts generated dot-atom e-mail addresses within the DICT length', () => {
    fc.assert(
      fc.property(
        fc.emailAddress().filter((e) => e.length <= 77 && e.indexOf('@') <= 64),
        (email) => expect(pixKeyError('EMAIL', email)).toBeUndefined(),
      ),
    );
  });

  it('refuses any valid key wrapped in whitespace, for every type', () => {
    const keys: Record<PixKeyType, string> = {
      CPF: '12345678909',
      CNPJ: '11222333000181',
      EMAIL: 'fulano@example.com',
      PHONE: '+5511987654321',
      RANDOM: '123e4567-e12b-12d1-a456-426655440000',
    };
    fc.assert(
      fc.property(
        fc.constantFrom(...PIX_KEY_TYPES),
        fc.constantFrom(' ', '\t', '\n', '\r\n', '\u00a0', '\u200b'),
        fc.constantFrom('before', 'after', 'both'),
        (type, space, where) => {
          const key = keys[type];
          expect(pixKeyError(type, key)).toBeUndefined();
          const wrapped = `${where === 'after' ? '' : space}${key}${where === 'before' ? '' : space}`;
          expect(pixKeyError(type, wrapped)).toBe(message(type));
        },
      ),
    );
  });

  it('returns undefined or the one message for any input', () => {
    fc.assert(
      fc.property(fc.constantFrom(...PIX_KEY_TYPES), fc.string({ unit: 'binary' }), (type, key) => {
        expect([undefined, message(type)]).toContain(pixKeyError(type, key));
      }),
    );
  });
});

describe('normalizePixKey', () => {
  it('upper-cases the letters of a CNPJ and leaves every other key as sent', () => {
    expect(normalizePixKey('CNPJ', '12abc34501De35')).toBe('12ABC34501DE35');
    expect(normalizePixKey('CNPJ', '11222333000181')).toBe('11222333000181');
    expect(normalizePixKey('EMAIL', 'Fulano@Example.com')).toBe('Fulano@Example.com');
    expect(normalizePixKey('RANDOM', 'bee05743-4291-4f3c-9259-595df1307ba1')).toBe(
      'bee05743-4291-4f3c-9259-595df1307ba1',
    );
  });
});
