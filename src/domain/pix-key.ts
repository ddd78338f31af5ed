/**
 * PIX key types and the key formats of the partner API contract (docs/api.md "PIX keys").
 *
 * Keys are checked as sent: surrounding or inner whitespace is refused, not trimmed. A payout stores
 * and returns the key the partner sent, so a silently trimmed key would be a different key from the
 * one in the request; and stray whitespace in a key is a copy-paste slip the partner should see.
 *
 * Only the format is checked, exactly as the contract states it: no check digits for the numeric
 * CPF and CNPJ, no area-code table. Whether a key exists is for the PIX directory to say, and a
 * stricter rule here would refuse requests the contract accepts. The one exception is the
 * alphanumeric CNPJ (below), a format the contract extends to, whose definition includes its check
 * digits.
 */

export const PIX_KEY_TYPES = ['CPF', 'CNPJ', 'EMAIL', 'PHONE', 'RANDOM'] as const;
export type PixKeyType = (typeof PIX_KEY_TYPES)[number];

export function normalizePixKeyType(input: string): PixKeyType | undefined {
  // ASCII letters only before upper-casing: 'emaıl' (dotless i) upper-cases to 'EMAIL'.
  if (!/^[A-Za-z]+$/.test(input)) return undefined;
  const upper = input.toUpperCase();
  return PIX_KEY_TYPES.find((type) => type === upper);
}

/** The PIX directory (DICT) caps e-mail keys at 77 characters. */
const MAX_EMAIL_KEY_LENGTH = 77;
const MAX_EMAIL_LOCAL_PART_LENGTH = 64;

// A pragmatic RFC 5322 subset: dot-atom local part (no quoted strings, no comments) and a domain of
// LDH labels ending in an alphabetic TLD (no IP literals). That is what real mailboxes use, and
// what banks accept as an e-mail PIX key.
const EMAIL_LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const DOMAIN_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const TOP_LEVEL_DOMAIN = /^[A-Za-z]{2,63}$/;

function isEmailAddress(key: string): boolean {
  if (key.length > MAX_EMAIL_KEY_LENGTH) return false;
  const at = key.lastIndexOf('@');
  if (at < 1) return false;
  const local = key.slice(0, at);
  const labels = key.slice(at + 1).split('.');
  const tld = labels[labels.length - 1] ?? '';
  return (
    local.length <= MAX_EMAIL_LOCAL_PART_LENGTH &&
    EMAIL_LOCAL_PART.test(local) &&
    labels.length >= 2 &&
    labels.every((label) => DOMAIN_LABEL.test(label)) &&
    TOP_LEVEL_DOMAIN.test(tld)
  );
}

/**
 * The alphanumeric CNPJ the Receita Federal issues from July 2026 (IN RFB 2.229/2024): 12 characters
 * of digits or upper-case letters, then 2 check digits. The check digits use the numeric CNPJ's
 * modulo-11 algorithm with each character worth its ASCII code minus 48 ('0'-'9' are 0-9, 'A' is
 * 17, 'Z' is 42), so an all-digit CNPJ computes exactly as before.
 */
const ALPHANUMERIC_CNPJ = /^[0-9A-Z]{12}[0-9]{2}$/;
const FIRST_CHECK_DIGIT_WEIGHTS = [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2];
const SECOND_CHECK_DIGIT_WEIGHTS = [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2];

function cnpjCheckDigit(characters: string, weights: readonly number[]): number {
  let sum = 0;
  for (let i = 0; i < weights.length; i += 1) sum += (characters.charCodeAt(i) - 48) * weights[i]!;
  const remainder = sum % 11;
  return remainder < 2 ? 0 : 11 - remainder;
}

/** An upper-cased alphanumeric CNPJ (at least one letter) whose two check digits are right. */
function isAlphanumericCnpj(upper: string): boolean {
  if (!ALPHANUMERIC_CNPJ.test(upper) || /^[0-9]+$/.test(upper)) return false;
  const first = cnpjCheckDigit(upper, FIRST_CHECK_DIGIT_WEIGHTS);
  const second = cnpjCheckDigit(upper, SECOND_CHECK_DIGIT_WEIGHTS);
  return upper.endsWith(`${first}${second}`);
}

// [0-9] rather than \d so the rules read as ASCII digits whatever flags a later edit adds.
const KEY_FORMATS: Record<PixKeyType, (key: string) => boolean> = {
  CPF: (key) => /^[0-9]{11}$/.test(key),
  // Letters of an alphanumeric CNPJ are accepted in either case (the key is stored upper-case).
  CNPJ: (key) => /^[0-9]{14}$/.test(key) || isAlphanumericCnpj(key.toUpperCase()),
  EMAIL: isEmailAddress,
  PHONE: (key) => /^(?:\+55)?[0-9]{10,11}$/.test(key),
  RANDOM: (key) => /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/.test(key),
};

/** Undefined when `key` is a valid key of `type`, else the 400 message naming the field. */
export function pixKeyError(type: PixKeyType, key: string): string | undefined {
  return KEY_FORMATS[type](key) ? undefined : `pix_key is not a valid ${type} key`;
}

/**
 * The form a valid key is stored and returned in: the key as sent, except a CNPJ's letters, which
 * are upper-case (the Receita Federal's form, and one spelling per CNPJ).
 */
export function normalizePixKey(type: PixKeyType, key: string): string {
  return type === 'CNPJ' ? key.toUpperCase() : key;
}
