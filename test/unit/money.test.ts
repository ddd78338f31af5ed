import fc from 'fast-check';

import {
  MIN_QUOTE_USDT_UNITS,
  MoneyFormatError,
  USDT_DECIMALS,
  centavosFromJsonNumber,
  centavosFromJsonNumberText,
  centavosToNumber,
  formatCentavos,
  formatUsdtUnits,
  maxExpectedUsdtUnits,
  minAmountUsdtUnits,
  parseDecimal,
  rateFromUsdPrices,
  usdtUnitsForBrl,
  usdtUnitsFromDecimal,
  usdtUnitsToNumber,
} from '../../src/domain/money';

const TWO_DECIMALS = 'amount_brl must have at most 2 decimal places';

describe('constants', () => {
  it('USDT has 6 decimals and the minimum quote is 0.01 USDT', () => {
    expect(USDT_DECIMALS).toBe(6);
    expect(MIN_QUOTE_USDT_UNITS).toBe(10_000n);
    expect(formatUsdtUnits(MIN_QUOTE_USDT_UNITS)).toBe('0.010000');
  });
});

describe('centavosFromJsonNumber', () => {
  it.each([
    [100, 10_000n],
    [100.5, 10_050n],
    [100.05, 10_005n],
    [100.1, 10_010n],
    [0.1, 10n],
    [0.01, 1n],
    [1.1, 110n],
    [99999.99, 9_999_999n],
    [123456789.12, 12_345_678_912n],
    [0, 0n],
    [-0, 0n],
    [-0.5, -50n],
    [-100.25, -10_025n],
    [1e21, 10n ** 23n],
    [1.5e22, 15n * 10n ** 23n],
  ])('%p is %p centavos', (value, centavos) => {
    expect(centavosFromJsonNumber(value)).toBe(centavos);
  });

  it.each([
    [0.001],
    [100.123],
    [1.005],
    [0.1 + 0.2],
    [1e-7],
    [1.5e-7],
    [-0.001],
    [Number.MIN_VALUE],
    [Number.EPSILON],
  ])('%p has too many decimals', (value) => {
    expect(() => centavosFromJsonNumber(value)).toThrow(new MoneyFormatError(TWO_DECIMALS));
  });

  it.each([[NaN], [Infinity], [-Infinity]])('%p is refused as not finite', (value) => {
    expect(() => centavosFromJsonNumber(value)).toThrow(MoneyFormatError);
    expect(() => centavosFromJsonNumber(value)).toThrow('amount_brl must be a finite number');
  });

  it('reads the number a JSON body carries, decimals as written', () => {
    const body = JSON.parse('{"a": 100.10, "b": 5e-1, "c": 1E2, "d": 0.30000000000000004}') as Record<
      string,
      number
    >;
    expect(centavosFromJsonNumber(body.a!)).toBe(10_010n);
    expect(centavosFromJsonNumber(body.b!)).toBe(50n);
    expect(centavosFromJsonNumber(body.c!)).toBe(10_000n);
    expect(() => centavosFromJsonNumber(body.d!)).toThrow(TWO_DECIMALS);
  });

  it('round-trips every centavos value below 10^15 through a JSON number', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 15n) + 1n, max: 10n ** 15n - 1n }), (c) => {
        const wire = JSON.parse(JSON.stringify({ amount: centavosToNumber(c) })) as { amount: number };
        expect(centavosFromJsonNumber(wire.amount)).toBe(c);
      }),
    );
  });

  it('accepts a double exactly when it is a 2-decimal value, and then reads it exactly', () => {
    fc.assert(
      fc.property(fc.double({ min: -1e20, max: 1e20, noNaN: true }), (value) => {
        // Independent oracle: the double is the one nearest to its own 2-decimal rendering.
        const twoDecimals = Number(value.toFixed(2)) === value;
        if (twoDecimals) {
          expect(Number(formatCentavos(centavosFromJsonNumber(value)))).toBe(value === 0 ? 0 : value);
        } else {
          expect(() => centavosFromJsonNumber(value)).toThrow(TWO_DECIMALS);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('accepts any integer-cent value built from integers', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e9, max: 1e9 }), fc.integer({ min: 0, max: 99 }), (whole, cents) => {
        const text = `${whole < 0 ? '-' : ''}${Math.abs(whole)}.${String(cents).padStart(2, '0')}`;
        const expected = BigInt(whole) * 100n + (whole < 0 ? -1n : 1n) * BigInt(cents);
        expect(centavosFromJsonNumber(Number(text))).toBe(expected);
      }),
    );
  });
});

describe('centavosFromJsonNumberText (the digits as the client wrote them)', () => {
  it.each([
    ['10', 1_000n],
    ['10.5', 1_050n],
    ['10.50', 1_050n],
    ['10.500000000000000000', 1_050n],
    ['1.05e1', 1_050n],
    ['1050E-2', 1_050n],
    ['0.01', 1n],
  ])('%s is %p centavos', (text, centavos) => {
    expect(centavosFromJsonNumberText(text)).toBe(centavos);
  });

  it.each(['10.001', '10.0000000000000001', '1e-7', '100.0000000000000000001', '1e-1001', '1.5e-2'])(
    '%s is refused, never rounded',
    (text) => {
      expect(() => centavosFromJsonNumberText(text)).toThrow(new MoneyFormatError(TWO_DECIMALS));
    },
  );

  it('agrees with centavosFromJsonNumber on every number a double holds exactly as printed', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (value) => {
        const fromText = () => centavosFromJsonNumberText(JSON.stringify(value));
        let expected: bigint | undefined;
        try {
          expected = centavosFromJsonNumber(value);
        } catch {
          expect(fromText).toThrow(MoneyFormatError);
          return;
        }
        expect(fromText()).toBe(expected);
      }),
    );
  });
});

describe('formatCentavos and centavosToNumber', () => {
  it.each([
    [0n, '0.00', 0],
    [1n, '0.01', 0.01],
    [-1n, '-0.01', -0.01],
    [50n, '0.50', 0.5],
    [-50n, '-0.50', -0.5],
    [10_000n, '100.00', 100],
    [10_050n, '100.50', 100.5],
    [12_345n, '123.45', 123.45],
    [10_000_000n, '100000.00', 100000],
    [123_456_789_012_345_678n, '1234567890123456.78', 1234567890123456.8],
  ])('%p is "%s" and %p', (c, text, number) => {
    expect(formatCentavos(c)).toBe(text);
    expect(centavosToNumber(c)).toBe(number);
  });

  it('formats back to what parseDecimal reads, for any bigint', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), (c) => {
        const text = formatCentavos(c);
        expect(text).toMatch(/^-?(0|[1-9][0-9]*)\.[0-9]{2}$/);
        expect(parseDecimal(text, 2)).toBe(c);
      }),
    );
  });
});

describe('parseDecimal', () => {
  it.each([
    ['5.50', 2, 550n],
    ['5.5', 2, 550n],
    ['5', 2, 500n],
    ['0.06', 2, 6n],
    ['0.06', 4, 600n],
    ['17.825311', 6, 17_825_311n],
    ['5.500', 2, 550n],
    ['5.50000000', 2, 550n],
    ['-1.25', 2, -125n],
    ['-0.00', 2, 0n],
    ['0', 0, 0n],
    ['42', 0, 42n],
    ['007.10', 2, 710n],
    ['1e-2', 2, 1n],
    ['1.5E+3', 0, 1500n],
    ['100000000000000000000000000.01', 2, 10n ** 28n + 1n],
  ])('"%s" at scale %p is %p', (text, scale, units) => {
    expect(parseDecimal(text, scale)).toBe(units);
  });

  it.each([
    ['5.555', 2],
    ['0.001', 2],
    ['1.5', 0],
    ['1e-3', 2],
    ['17.8253111', 6],
  ])('"%s" has more decimals than scale %p', (text, scale) => {
    expect(() => parseDecimal(text, scale)).toThrow(
      new MoneyFormatError(`"${text}" has more than ${scale} decimal places`),
    );
  });

  it.each([
    [''],
    [' 5.5'],
    ['5.5 '],
    ['5.'],
    ['.5'],
    ['+5'],
    ['1,5'],
    ['1.2.3'],
    ['--1'],
    ['abc'],
    ['0x10'],
    ['NaN'],
    ['Infinity'],
    ['1e'],
    ['1e999999999'],
    ['1e-999999999'],
    ['５'],
  ])('"%s" is malformed', (text) => {
    expect(() => parseDecimal(text, 2)).toThrow(
      new MoneyFormatError(`not a decimal number: ${JSON.stringify(text)}`),
    );
  });

  it.each([[-1], [1.5], [NaN]])('refuses scale %p', (scale) => {
    expect(() => parseDecimal('1', scale)).toThrow(RangeError);
  });
});

describe('USDT units', () => {
  it.each([
    ['17.825311', 17_825_311n, '17.825311', 17.825311],
    ['0.01', 10_000n, '0.010000', 0.01],
    ['0.000001', 1n, '0.000001', 0.000001],
    ['1', 1_000_000n, '1.000000', 1],
    ['0', 0n, '0.000000', 0],
    ['18.000000', 18_000_000n, '18.000000', 18],
    ['-2.5', -2_500_000n, '-2.500000', -2.5],
  ])('"%s" is %p units, "%s", %p', (text, units, formatted, number) => {
    expect(usdtUnitsFromDecimal(text)).toBe(units);
    expect(formatUsdtUnits(units)).toBe(formatted);
    expect(usdtUnitsToNumber(units)).toBe(number);
  });

  it('refuses a seventh decimal', () => {
    expect(() => usdtUnitsFromDecimal('1.0000001')).toThrow(MoneyFormatError);
  });

  it('round-trips units through the decimal string and through a JSON number', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 15n - 1n }), (u) => {
        expect(usdtUnitsFromDecimal(formatUsdtUnits(u))).toBe(u);
        expect(usdtUnitsFromDecimal(String(usdtUnitsToNumber(u)))).toBe(u);
      }),
    );
  });
});

describe('minAmountUsdtUnits', () => {
  it.each([
    // 100.00 / (5.50 * 1.06) = 17.15265866...
    [10_000n, '5.50', '0.06', 17_152_658n],
    [100n, '5.50', '0.06', 171_526n],
    [1n, '5.50', '0.06', 1_715n],
    // 5.83 / 5.83 is exactly 1: nothing to round.
    [583n, '5.50', '0.06', 1_000_000n],
    [582n, '5.50', '0.06', 998_284n],
    [10_000n, '5', '0', 20_000_000n],
    [10_000n, '5.5', '0.06', 17_152_658n],
    [10_000n, '5.500000', '0.060', 17_152_658n],
    [10_000_000n, '5.50', '0.06', 17_152_658_662n],
    [10_000n, '4.987654321', '0.06', 18_914_627n],
    [0n, '5.50', '0.06', 0n],
    // Rounded down (toward -infinity), also below zero.
    [-583n, '5.50', '0.06', -1_000_000n],
    [-1n, '5.50', '0.06', -1_716n],
  ])('%p centavos at rate %s, buffer %s: %p units', (centavos, rate, buffer, units) => {
    expect(minAmountUsdtUnits(centavos, rate, buffer)).toBe(units);
    expect(usdtUnitsForBrl(centavos, rate, buffer)).toBe(units);
  });

  it('puts the minimum quote of 0.01 USDT at 6 centavos for the default rate and buffer', () => {
    expect(minAmountUsdtUnits(5n, '5.50', '0.06')).toBeLessThan(MIN_QUOTE_USDT_UNITS);
    expect(minAmountUsdtUnits(6n, '5.50', '0.06')).toBeGreaterThanOrEqual(MIN_QUOTE_USDT_UNITS);
  });

  it('gives what the provider sends at the sandbox spread (2%)', () => {
    // 100.00 / (5.50 * 1.02) = 17.82531194...
    expect(formatUsdtUnits(usdtUnitsForBrl(10_000n, '5.50', '0.02'))).toBe('17.825311');
  });

  it.each([
    ['0', '0.06', 'rate must be > 0, got 0'],
    ['0.000', '0.06', 'rate must be > 0, got 0.000'],
    ['-5.50', '0.06', 'rate must be > 0, got -5.50'],
    ['5.50', '-1', 'buffer must be > -1, got -1'],
    ['5.50', '-1.5', 'buffer must be > -1, got -1.5'],
  ])('refuses rate %s with buffer %s', (rate, buffer, message) => {
    expect(() => minAmountUsdtUnits(10_000n, rate, buffer)).toThrow(new RangeError(message));
  });

  it.each([
    ['abc', '0.06'],
    ['5,50', '0.06'],
    ['5.50', ''],
    ['5.50', '6%'],
  ])('refuses malformed rate %p or buffer %p', (rate, buffer) => {
    expect(() => minAmountUsdtUnits(10_000n, rate, buffer)).toThrow(MoneyFormatError);
  });

  const decimalString = (units: bigint, scale: number): string => {
    const digits = units.toString().padStart(scale + 1, '0');
    return scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  };

  it('is the floor of the exact rational value: <= exact and > exact - 1 unit', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(10n ** 12n), max: 10n ** 12n }),
        fc.bigInt({ min: 1n, max: 10n ** 10n }),
        fc.integer({ min: 0, max: 8 }),
        fc.bigInt({ min: 0n, max: 10n ** 6n }),
        fc.integer({ min: 0, max: 6 }),
        (centavos, rateUnits, rateScale, bufferUnits, bufferScale) => {
          const units = minAmountUsdtUnits(
            centavos,
            decimalString(rateUnits, rateScale),
            decimalString(bufferUnits, bufferScale),
          );
          // exact = (centavos / 100) * 10^6 / ((rateUnits / 10^rs) * (1 + bufferUnits / 10^bs))
          //       = N / D with integers straight from the generators.
          const rs = 10n ** BigInt(rateScale);
          const bs = 10n ** BigInt(bufferScale);
          const n = centavos * 10_000n * rs * bs;
          const d = rateUnits * (bs + bufferUnits);
          expect(units * d <= n).toBe(true);
          expect((units + 1n) * d > n).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('agrees with floating point to within float error, as a sanity check', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000_000 }),
        fc.integer({ min: 100, max: 100_000 }),
        (centavos, rateCents) => {
          const units = minAmountUsdtUnits(BigInt(centavos), formatCentavos(BigInt(rateCents)), '0.06');
          const approx = (centavos / 100 / ((rateCents / 100) * 1.06)) * 1e6;
          expect(Math.abs(Number(units) - approx)).toBeLessThanOrEqual(1.000001);
        },
      ),
    );
  });

  it('never gives more for a larger buffer or a higher rate, nor less for more BRL', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 9n }),
        fc.bigInt({ min: 0n, max: 10n ** 6n }),
        fc.bigInt({ min: 1n, max: 10n ** 6n }),
        fc.bigInt({ min: 0n, max: 10n ** 4n }),
        (centavos, extra, rateCents, bufferBps) => {
          const rate = formatCentavos(rateCents);
          const buffer = decimalString(bufferBps, 4);
          const base = minAmountUsdtUnits(centavos, rate, buffer);
          expect(minAmountUsdtUnits(centavos + extra, rate, buffer)).toBeGreaterThanOrEqual(base);
          expect(minAmountUsdtUnits(centavos, rate, decimalString(bufferBps + extra, 4))).toBeLessThanOrEqual(
            base,
          );
          expect(minAmountUsdtUnits(centavos, formatCentavos(rateCents + extra), buffer)).toBeLessThanOrEqual(
            base,
          );
        },
      ),
    );
  });
});

describe('maxExpectedUsdtUnits (the most a payment buys at its quote, plus the tolerance)', () => {
  it('is floor(amount × (1 + tolerance) / spot) in base units', () => {
    // 100.00 BRL at 5.50: 18.181818 USDT; with 2 %: 18.545454.
    expect(maxExpectedUsdtUnits(10000n, '5.50', '0')).toBe(18_181_818n);
    expect(maxExpectedUsdtUnits(10000n, '5.50', '0.02')).toBe(18_545_454n);
  });

  it('is never below the guaranteed minimum of the same quote', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 10_000_000n }),
        fc.integer({ min: 100, max: 100_000 }),
        (centavos, rateCents) => {
          const rate = formatCentavos(BigInt(rateCents));
          expect(maxExpectedUsdtUnits(centavos, rate, '0')).toBeGreaterThanOrEqual(
            minAmountUsdtUnits(centavos, rate, '0.06'),
          );
        },
      ),
    );
  });

  it('refuses a rate that is not positive and a negative tolerance', () => {
    expect(() => maxExpectedUsdtUnits(10000n, '0', '0.02')).toThrow(RangeError);
    expect(() => maxExpectedUsdtUnits(10000n, '5.50', '-0.01')).toThrow(RangeError);
  });
});

describe('rateFromUsdPrices (BRL per USDT from two USD feeds)', () => {
  const at8 = (answer: bigint) => ({ answer, decimals: 8 });
  it.each([
    // 1.0001 / 0.18 = 5.556111…, rounded up at the 8th decimal.
    [at8(100_010_000n), at8(18_000_000n), '5.55611112'],
    [at8(100_000_000n), at8(20_000_000n), '5.00000000'],
    [at8(99_950_000n), at8(20_000_000n), '4.99750000'],
    // Feeds of different decimals: USDT/USD at 18, BRL/USD at 8.
    [{ answer: 10n ** 18n, decimals: 18 }, at8(18_000_000n), '5.55555556'],
    [at8(1n), at8(100_000_000n), '0.00000001'],
  ])('%p / %p = %s', (usdtUsd, brlUsd, rate) => {
    expect(rateFromUsdPrices(usdtUsd, brlUsd)).toBe(rate);
  });

  it('never rounds the rate down (a lower rate would promise more USDT than the feeds are worth)', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 10n ** 12n }),
        fc.bigInt({ min: 1n, max: 10n ** 12n }),
        (u, b) => {
          const rate = rateFromUsdPrices(at8(u), at8(b));
          const units = parseDecimal(rate, 8);
          // units / 10^8 >= u / b, and less than one unit above it.
          expect(units * b >= u * 10n ** 8n).toBe(true);
          expect((units - 1n) * b < u * 10n ** 8n).toBe(true);
        },
      ),
    );
  });

  it('refuses a non-positive answer', () => {
    expect(() => rateFromUsdPrices(at8(0n), at8(18_000_000n))).toThrow(RangeError);
    expect(() => rateFromUsdPrices(at8(100_000_000n), at8(-1n))).toThrow(RangeError);
  });
});
