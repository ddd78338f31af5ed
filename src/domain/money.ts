/**
 * Money arithmetic. BRL lives as integer centavos and USDT as integer base units (6 decimals), both
 * bigint; decimal strings and JSON numbers are converted exactly at the edges, never through binary
 * floating point arithmetic.
 */

export const USDT_DECIMALS = 6;
/** 0.01 USDT, the minimum quote (docs/decisions.md D5). */
export const MIN_QUOTE_USDT_UNITS = 10_000n;

const BRL_DECIMALS = 2;

export class MoneyFormatError extends Error {
  override name = 'MoneyFormatError';
}

/** An exact decimal value: `coefficient * 10^exponent`. */
interface Decimal {
  coefficient: bigint;
  exponent: number;
}

// Exponent notation is accepted because it is what String(number) yields for very small or very
// large numbers (1e-7, 1e+21); it is still an exact decimal.
const DECIMAL_PATTERN = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;

const MAX_EXPONENT = 1000;

function parseExact(text: string): Decimal | undefined {
  const match = DECIMAL_PATTERN.exec(text);
  if (!match) return undefined;
  const [, sign = '', whole = '', fraction = '', exp = '0'] = match;
  // Trailing zeros carry no precision: 5.500 and 5.5 are the same value, with the same scale needs.
  const all = whole + fraction;
  let end = all.length;
  while (end > 0 && all[end - 1] === '0') end -= 1;
  if (end === 0) return { coefficient: 0n, exponent: 0 };
  const digits = all.slice(0, end);
  const exponent = Number(exp) - fraction.length + (all.length - end);
  // Bounded so that a hostile "1e999999999" cannot make 10n ** exponent eat the process.
  if (!(Math.abs(exponent) <= MAX_EXPONENT)) return undefined;
  const coefficient = BigInt(digits);
  return { coefficient: sign === '-' ? -coefficient : coefficient, exponent };
}

/** Integer units at `scale`, or undefined when the value has more significant decimals than that. */
function toUnits(d: Decimal, scale: number): bigint | undefined {
  const shift = d.exponent + scale;
  if (shift < 0) return undefined;
  return d.coefficient * 10n ** BigInt(shift);
}

const TOO_MANY_DECIMALS = 'amount_brl must have at most 2 decimal places';

/**
 * Centavos of an `amount_brl` JSON number. The decision about decimals is taken on the shortest
 * round-trip decimal form of the double (what JSON.stringify would print), so 100.1 is 10010n while
 * 0.1 + 0.2 (0.30000000000000004) is refused instead of being silently rounded. A double cannot
 * show digits it lost in parsing (10.0000000000000001 is 10): the api checks the source text of the
 * number with centavosFromJsonNumberText before this runs.
 */
export function centavosFromJsonNumber(value: number): bigint {
  if (!Number.isFinite(value)) throw new MoneyFormatError('amount_brl must be a finite number');
  return centavosFromJsonNumberText(String(value));
}

/**
 * Centavos of an `amount_brl` JSON number as the client wrote it ("10.50", "1.05e1"): exact, so a
 * significant digit past the second decimal is refused whatever a double would round it to.
 * Trailing zeros carry no precision ("10.500" is 1050n).
 */
export function centavosFromJsonNumberText(text: string): bigint {
  const decimal = parseExact(text);
  // An exponent beyond MAX_EXPONENT is refused by parseExact; a positive one that large is far
  // beyond any maximum amount, and a negative one cannot be whole centavos.
  if (!decimal) throw new MoneyFormatError(TOO_MANY_DECIMALS);
  const centavos = toUnits(decimal, BRL_DECIMALS);
  if (centavos === undefined) throw new MoneyFormatError(TOO_MANY_DECIMALS);
  return centavos;
}

/** `units` as a plain decimal string with exactly `scale` decimals ("-0.50", "17.825311"). */
function formatUnits(units: bigint, scale: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale);
  return `${negative ? '-' : ''}${whole}${scale > 0 ? `.${fraction}` : ''}`;
}

export function formatCentavos(c: bigint): string {
  return formatUnits(c, BRL_DECIMALS);
}

/**
 * For JSON output only. Goes through the decimal string so the double is the one nearest the exact
 * value, and prints back as it (exact for anything below 10^13 BRL).
 */
export function centavosToNumber(c: bigint): number {
  return Number(formatCentavos(c));
}

/**
 * Exact decimal string to integer units at `scale` ("5.50" at 2 is 550n). Trailing zeros beyond the
 * scale are accepted ("5.500" at 2) because the value is still exact; a significant digit beyond it
 * is refused, never rounded.
 */
export function parseDecimal(s: string, scale: number): bigint {
  if (!Number.isSafeInteger(scale) || scale < 0) throw new RangeError('scale must be a non-negative integer');
  const decimal = parseExact(s);
  if (!decimal) throw new MoneyFormatError(`not a decimal number: ${JSON.stringify(s)}`);
  const units = toUnits(decimal, scale);
  if (units === undefined) {
    throw new MoneyFormatError(`${JSON.stringify(s)} has more than ${scale} decimal places`);
  }
  return units;
}

export function usdtUnitsFromDecimal(s: string): bigint {
  return parseDecimal(s, USDT_DECIMALS);
}

export function formatUsdtUnits(u: bigint): string {
  return formatUnits(u, USDT_DECIMALS);
}

/** For JSON output only; see centavosToNumber. */
export function usdtUnitsToNumber(u: bigint): number {
  return Number(formatUsdtUnits(u));
}

/** A positive exact fraction `numerator / denominator` of a decimal string. */
function fractionOf(text: string, what: string): { numerator: bigint; denominator: bigint } {
  const decimal = parseExact(text);
  if (!decimal) throw new MoneyFormatError(`${what} is not a decimal number: ${JSON.stringify(text)}`);
  return decimal.exponent >= 0
    ? { numerator: decimal.coefficient * 10n ** BigInt(decimal.exponent), denominator: 1n }
    : { numerator: decimal.coefficient, denominator: 10n ** BigInt(-decimal.exponent) };
}

/** Floor division for a positive divisor (bigint `/` truncates toward zero). */
function floorDiv(dividend: bigint, divisor: bigint): bigint {
  const quotient = dividend / divisor;
  return dividend % divisor < 0n ? quotient - 1n : quotient;
}

/**
 * floor(amount_brl / (spot_rate * (1 + buffer))) in USDT base units, computed as one exact rational
 * division so the only rounding is the final, documented one (down: the minimum is a guarantee).
 */
export function minAmountUsdtUnits(centavos: bigint, spotRate: string, buffer: string): bigint {
  const rate = fractionOf(spotRate, 'rate');
  const margin = fractionOf(buffer, 'buffer');
  if (rate.numerator <= 0n) throw new RangeError(`rate must be > 0, got ${spotRate}`);
  const onePlusMargin = margin.denominator + margin.numerator; // (1 + buffer) * margin.denominator
  if (onePlusMargin <= 0n) throw new RangeError(`buffer must be > -1, got ${buffer}`);

  // centavos / 10^2 BRL, result scaled by 10^6: multiply by 10^(6 - 2).
  const scaleUp = 10n ** BigInt(USDT_DECIMALS - BRL_DECIMALS);
  const numerator = centavos * scaleUp * rate.denominator * margin.denominator;
  const denominator = rate.numerator * onePlusMargin;
  return floorDiv(numerator, denominator);
}

/** What the provider delivers for a BRL amount at its rate and spread: the same formula. */
export function usdtUnitsForBrl(centavos: bigint, rate: string, spread: string): bigint {
  return minAmountUsdtUnits(centavos, rate, spread);
}

/**
 * The most USDT a BRL amount can buy at the spot rate plus a tolerance, in base units:
 * floor(amount_brl × (1 + tolerance) / spot_rate). A settlement above it means the provider converted
 * more than this payment (money that may be in a refund case), so it is alerted.
 */
export function maxExpectedUsdtUnits(centavos: bigint, spotRate: string, tolerance: string): bigint {
  const rate = fractionOf(spotRate, 'rate');
  const margin = fractionOf(tolerance, 'tolerance');
  if (rate.numerator <= 0n) throw new RangeError(`rate must be > 0, got ${spotRate}`);
  if (margin.numerator < 0n) throw new RangeError(`tolerance must be >= 0, got ${tolerance}`);
  const scaleUp = 10n ** BigInt(USDT_DECIMALS - BRL_DECIMALS);
  const numerator = centavos * scaleUp * rate.denominator * (margin.denominator + margin.numerator);
  return floorDiv(numerator, rate.numerator * margin.denominator);
}

/** Decimals of a rate derived from price feeds (docs/decisions.md D52). */
export const DERIVED_RATE_DECIMALS = 8;

/** A price feed's answer: `answer / 10^decimals` units of the quote currency (USD) per unit. */
export interface FeedPrice {
  answer: bigint;
  decimals: number;
}

/**
 * BRL per 1 USDT from two USD prices, (USDT/USD) / (BRL/USD), as a decimal string with
 * DERIVED_RATE_DECIMALS decimals, computed as one exact integer division and rounded up: a higher
 * rate lowers `min_amount_usdt`, so the rounding (under 1e-8 BRL) never promises more USDT than the
 * feeds are worth. Both answers must be positive.
 */
export function rateFromUsdPrices(usdtUsd: FeedPrice, brlUsd: FeedPrice): string {
  if (usdtUsd.answer <= 0n || brlUsd.answer <= 0n) throw new RangeError('price feed answers must be > 0');
  for (const d of [usdtUsd.decimals, brlUsd.decimals]) {
    if (!Number.isSafeInteger(d) || d < 0 || d > 77) throw new RangeError(`feed decimals out of range: ${d}`);
  }
  // (u / 10^du) / (b / 10^db) × 10^R = u × 10^(db + R) / (b × 10^du)
  const numerator = usdtUsd.answer * 10n ** BigInt(brlUsd.decimals + DERIVED_RATE_DECIMALS);
  const denominator = brlUsd.answer * 10n ** BigInt(usdtUsd.decimals);
  const units = (numerator + denominator - 1n) / denominator;
  return formatUnits(units, DERIVED_RATE_DECIMALS);
}
