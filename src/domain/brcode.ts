/**
 * EMV BR Code, the PIX "copia e cola" string, after the Banco Central "Manual de Padrões para
 * Iniciação do Pix" (EMV QRCPS merchant-presented mode). Every field is ID (2 digits) + length
 * (2 digits) + value, and the code ends with field 63, a CRC16 over everything before its value.
 */

export class BrCodeError extends Error {
  override name = 'BrCodeError';
}

export interface BrCodeInput {
  pixKey: string;
  merchantName: string;
  merchantCity: string;
  /** BRL with exactly 2 decimals, "100.00" (formatCentavos output); omitted: the payer types it. */
  amount?: string;
  /** 1-25 of [A-Za-z0-9], or "***" for none. */
  txid: string;
  /** Free text shown to the payer (field 26-02). */
  description?: string;
}

/**
 * A dynamic BR Code (API Pix cob): the payer's bank fetches the charge from `location` instead of
 * reading a key, so there is no key and no txid in the code (62-05 is "***").
 */
export interface DynamicBrCodeInput {
  /** The cob's location, without scheme ("pix.example.com/qr/v2/..."), field 26-25. */
  location: string;
  merchantName: string;
  merchantCity: string;
  /** BRL with exactly 2 decimals; omitted: the payer's bank reads it from the location. */
  amount?: string;
}

export interface ParsedBrCode {
  payloadFormatIndicator: string;
  pointOfInitiationMethod?: string;
  merchantAccount: { gui: string; key?: string; url?: string; description?: string };
  merchantCategoryCode: string;
  transactionCurrency: string;
  transactionAmount?: string;
  countryCode: string;
  merchantName: string;
  merchantCity: string;
  txid?: string;
  crc: string;
}

const PIX_GUI = 'br.gov.bcb.pix';
const BRL_CURRENCY = '986';
const MAX_CODE_LENGTH = 512; // EMV QRCPS limit for a whole payload
const MAX_FIELD_LENGTH = 99; // the length is two decimal digits
const MAX_PIX_KEY_LENGTH = 77; // longest DICT key (an e-mail)
const MAX_NAME_LENGTH = 25;
const MAX_CITY_LENGTH = 15;
const MAX_TXID_LENGTH = 25;
const MAX_LOCATION_LENGTH = 77; // API Pix `location` maxLength
const MAX_AMOUNT_LENGTH = 13;
const CRC_TAG = '6304';

const ID = {
  payloadFormat: '00',
  pointOfInitiation: '01',
  merchantCategory: '52',
  currency: '53',
  amount: '54',
  country: '58',
  merchantName: '59',
  merchantCity: '60',
  additionalData: '62',
  crc: '63',
} as const;
const ACCOUNT = { gui: '00', key: '01', description: '02', url: '25' } as const;
const ADDITIONAL = { txid: '05' } as const;

/** CRC16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection) as 4 upper-case hex digits. */
export function crc16ccitt(payload: string): string {
  let crc = 0xffff;
  // Over UTF-8 bytes, as other implementations do; the codes this module writes are plain ASCII.
  for (const byte of new TextEncoder().encode(payload)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc.toString(16).toUpperCase().padStart(4, '0');
}

// ---------------------------------------------------------------------------------------------------
// Encoding

function field(id: string, value: string): string {
  const length = [...value].length;
  if (length > MAX_FIELD_LENGTH) throw new BrCodeError(`field ${id} would be ${length} characters, over 99`);
  return `${id}${String(length).padStart(2, '0')}${value}`;
}

/**
 * Accents are stripped (São Paulo -> Sao Paulo) because payer apps and the EMV character set are
 * ASCII; anything still outside printable ASCII is refused rather than dropped, so a name is never
 * changed beyond recognition without the caller knowing.
 */
function asciiText(what: string, value: string, maxLength: number): string {
  const text = value.normalize('NFD').replace(/\p{M}/gu, '');
  if (!/^[\x20-\x7e]*$/.test(text)) throw new BrCodeError(`${what} has characters outside printable ASCII`);
  if (text.trim() !== text) throw new BrCodeError(`${what} must not start or end with whitespace`);
  if (text.length === 0) throw new BrCodeError(`${what} must not be empty`);
  if (text.length > maxLength) throw new BrCodeError(`${what} must be at most ${maxLength} characters`);
  return text;
}

function checkedPixKey(key: string): string {
  if (!/^[\x21-\x7e]+$/.test(key))
    throw new BrCodeError('pixKey must be non-empty printable ASCII without spaces');
  if (key.length > MAX_PIX_KEY_LENGTH)
    throw new BrCodeError(`pixKey must be at most ${MAX_PIX_KEY_LENGTH} characters`);
  return key;
}

function checkedAmount(amount: string): string {
  if (!/^(?:0|[1-9][0-9]*)\.[0-9]{2}$/.test(amount) || amount.length > MAX_AMOUNT_LENGTH) {
    throw new BrCodeError('amount must be a decimal with 2 places, at most 13 characters, e.g. "100.00"');
  }
  if (amount === '0.00') throw new BrCodeError('amount must be > 0');
  return amount;
}

function checkedTxid(txid: string): string {
  if (txid === '***' || /^[A-Za-z0-9]{1,25}$/.test(txid)) return txid;
  throw new BrCodeError('txid must be 1-25 characters of [A-Za-z0-9], or "***"');
}

function checkedLocation(location: string): string {
  if (!/^[\x21-\x7e]+$/.test(location))
    throw new BrCodeError('location must be non-empty printable ASCII without spaces');
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(location))
    throw new BrCodeError('location must be written without its scheme (no "https://")');
  if (location.length > MAX_LOCATION_LENGTH)
    throw new BrCodeError(`location must be at most ${MAX_LOCATION_LENGTH} characters`);
  return location;
}

/** Everything after field 26, the same in static and dynamic codes. */
function fieldsAfterAccount(input: {
  merchantName: string;
  merchantCity: string;
  amount?: string;
  txid: string;
}): string {
  return (
    field(ID.merchantCategory, '0000') +
    field(ID.currency, BRL_CURRENCY) +
    (input.amount === undefined ? '' : field(ID.amount, checkedAmount(input.amount))) +
    field(ID.country, 'BR') +
    field(ID.merchantName, asciiText('merchantName', input.merchantName, MAX_NAME_LENGTH)) +
    field(ID.merchantCity, asciiText('merchantCity', input.merchantCity, MAX_CITY_LENGTH)) +
    field(ID.additionalData, field(ADDITIONAL.txid, checkedTxid(input.txid))) +
    CRC_TAG
  );
}

/** A static (key-based) BR Code: what providers commonly issue for a charge with amount and txid. */
export function encodeBrCode(input: BrCodeInput): string {
  const key = checkedPixKey(input.pixKey);
  const description =
    input.description === undefined
      ? undefined
      : asciiText('description', input.description, MAX_FIELD_LENGTH);
  const account =
    field(ACCOUNT.gui, PIX_GUI) +
    field(ACCOUNT.key, key) +
    (description === undefined ? '' : field(ACCOUNT.description, description));
  if (account.length > MAX_FIELD_LENGTH) {
    throw new BrCodeError('pixKey and description together exceed the 99 characters of field 26');
  }
  const body = field(ID.payloadFormat, '01') + field('26', account) + fieldsAfterAccount(input);
  return body + crc16ccitt(body);
}

/**
 * A dynamic BR Code, as a PSP issues it for an API Pix cob: point of initiation 12 (single use), the
 * location in 26-25 and no key, txid "***" (the cob's txid is behind the location).
 */
export function encodeDynamicBrCode(input: DynamicBrCodeInput): string {
  const account = field(ACCOUNT.gui, PIX_GUI) + field(ACCOUNT.url, checkedLocation(input.location));
  const body =
    field(ID.payloadFormat, '01') +
    field(ID.pointOfInitiation, '12') +
    field('26', account) +
    fieldsAfterAccount({ ...input, txid: '***' });
  return body + crc16ccitt(body);
}

// ---------------------------------------------------------------------------------------------------
// Parsing

/**
 * Splits a run of TLV fields into id -> value. Lengths count characters (code points), as EMV does.
 * `where` names the enclosing field in messages.
 */
function readFields(chars: readonly string[], where: string): Map<string, string> {
  const fields = new Map<string, string>();
  let at = 0;
  while (at < chars.length) {
    const head = chars.slice(at, at + 4).join('');
    if (!/^[0-9]{4}$/.test(head)) {
      throw new BrCodeError(`malformed field header ${JSON.stringify(head)} at position ${at} of ${where}`);
    }
    const id = head.slice(0, 2);
    const length = Number(head.slice(2));
    const end = at + 4 + length;
    if (end > chars.length) throw new BrCodeError(`field ${id} of ${where} runs past its end`);
    if (fields.has(id)) throw new BrCodeError(`field ${id} appears twice in ${where}`);
    fields.set(id, chars.slice(at + 4, end).join(''));
    at = end;
  }
  return fields;
}

function subFields(value: string, id: string): Map<string, string> {
  return readFields([...value], `field ${id}`);
}

function required(fields: Map<string, string>, id: string, what: string): string {
  const value = fields.get(id);
  if (value === undefined) throw new BrCodeError(`missing field ${id} (${what})`);
  return value;
}

function check(ok: boolean, message: string): void {
  if (!ok) throw new BrCodeError(message);
}

function hasControlCharacter(text: string): boolean {
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** The PIX template is any of fields 26-51 whose GUI is br.gov.bcb.pix (case-insensitive). */
function pixAccount(fields: Map<string, string>): ParsedBrCode['merchantAccount'] {
  for (let n = 26; n <= 51; n += 1) {
    const id = String(n);
    const value = fields.get(id);
    if (value === undefined) continue;
    const account = subFields(value, id);
    const gui = account.get(ACCOUNT.gui);
    if (gui === undefined || gui.toLowerCase() !== PIX_GUI) continue;

    const key = account.get(ACCOUNT.key);
    const url = account.get(ACCOUNT.url);
    const description = account.get(ACCOUNT.description);
    check(
      (key === undefined) !== (url === undefined),
      `field ${id} must hold either a PIX key (01) or a URL (25)`,
    );
    check(
      key === undefined || (key.length > 0 && key.length <= MAX_PIX_KEY_LENGTH),
      'PIX key length is invalid',
    );
    // Some issuers write the scheme too (pix-utils does), so that is not held against them; field
    // 26's 99 characters already bound the length.
    check(url === undefined || url.length > 0, 'URL (26-25) must not be empty');
    return {
      gui,
      ...(key === undefined ? {} : { key }),
      ...(url === undefined ? {} : { url }),
      ...(description === undefined ? {} : { description }),
    };
  }
  throw new BrCodeError(`no PIX merchant account (a field 26-51 with GUI ${PIX_GUI})`);
}

/**
 * Parses and verifies a BR Code: structure, the fields PIX requires, their lengths, and the CRC.
 * Fields PIX does not use (other arrangements, postal code, templates 64 and 80-99) are skipped.
 * The input is taken as is: whitespace around a pasted code is the caller's to trim.
 */
export function parseBrCode(code: string): ParsedBrCode {
  const chars = [...code];
  check(chars.length <= MAX_CODE_LENGTH, `code is longer than ${MAX_CODE_LENGTH} characters`);
  check(!hasControlCharacter(code), 'code contains control characters');
  const tail = chars.slice(-8).join('');
  check(/^6304[0-9A-Fa-f]{4}$/.test(tail), 'code must end with the CRC field 63 (6304 + 4 hex digits)');

  // CRC first: on a corrupted code it is the truthful error, whatever the damage did to the fields.
  const crc = tail.slice(4).toUpperCase();
  const computed = crc16ccitt(chars.slice(0, -4).join(''));
  check(crc === computed, `CRC mismatch: the code says ${crc}, its content gives ${computed}`);

  const fields = readFields(chars, 'the code');
  const ids = [...fields.keys()];
  check(ids[0] === ID.payloadFormat, 'field 00 (payload format indicator) must come first');
  check(ids[ids.length - 1] === ID.crc, 'field 63 (CRC) must come last');
  const payloadFormatIndicator = required(fields, ID.payloadFormat, 'payload format indicator');
  check(payloadFormatIndicator === '01', 'payload format indicator (00) must be "01"');

  const pointOfInitiationMethod = fields.get(ID.pointOfInitiation);
  check(
    pointOfInitiationMethod === undefined ||
      pointOfInitiationMethod === '11' ||
      pointOfInitiationMethod === '12',
    'point of initiation method (01) must be "11" or "12"',
  );

  const merchantCategoryCode = required(fields, ID.merchantCategory, 'merchant category code');
  check(/^[0-9]{4}$/.test(merchantCategoryCode), 'merchant category code (52) must be 4 digits');
  const transactionCurrency = required(fields, ID.currency, 'transaction currency');
  check(transactionCurrency === BRL_CURRENCY, 'transaction currency (53) must be 986 (BRL)');
  const transactionAmount = fields.get(ID.amount);
  check(
    transactionAmount === undefined ||
      (/^[0-9]+(?:\.[0-9]{1,2})?$/.test(transactionAmount) && transactionAmount.length <= MAX_AMOUNT_LENGTH),
    'transaction amount (54) must be a decimal number with at most 2 places and 13 characters',
  );
  const countryCode = required(fields, ID.country, 'country code');
  check(countryCode === 'BR', 'country code (58) must be "BR"');
  const merchantName = required(fields, ID.merchantName, 'merchant name');
  check(
    merchantName.length >= 1 && [...merchantName].length <= MAX_NAME_LENGTH,
    'merchant name (59) must be 1-25 characters',
  );
  const merchantCity = required(fields, ID.merchantCity, 'merchant city');
  check(
    merchantCity.length >= 1 && [...merchantCity].length <= MAX_CITY_LENGTH,
    'merchant city (60) must be 1-15 characters',
  );

  const additional = fields.get(ID.additionalData);
  const txid =
    additional === undefined ? undefined : subFields(additional, ID.additionalData).get(ADDITIONAL.txid);
  // Other issuers' txids may use more than [A-Za-z0-9] (the BR Code manual's own example has "-"),
  // so only the length is held against them; encodeBrCode is the strict side.
  check(
    txid === undefined || (txid.length >= 1 && [...txid].length <= MAX_TXID_LENGTH),
    'txid (62-05) must be 1-25 characters',
  );

  return {
    payloadFormatIndicator,
    ...(pointOfInitiationMethod === undefined ? {} : { pointOfInitiationMethod }),
    merchantAccount: pixAccount(fields),
    merchantCategoryCode,
    transactionCurrency,
    ...(transactionAmount === undefined ? {} : { transactionAmount }),
    countryCode,
    merchantName,
    merchantCity,
    ...(txid === undefined ? {} : { txid }),
    crc,
  };
}
