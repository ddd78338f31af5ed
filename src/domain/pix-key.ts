/**
 * PIX key types and the key formats of docs/api.md "PIX keys".
 *
 * Keys are checked as sent: surrounding or inner whitespace is refused, not trimmed. A payout stores
 * and returns the key the partner sent, so a silently trimmed key would be a different key from the
 * one in the request; and stray whitespace in a key is a copy-paste slip the partner should see.
 *
 * Only the format is checked, as docs/decisions.md D9 decides: no CPF/CNPJ check digits, no area-code
 * table. Whether a key exists is for the PIX directory to say, and a stricter rule here would refuse
 * requests the contract accepts.
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

// [0-9] rather than \d so the rules read as ASCII digits whatever flags a later edit adds.
const KEY_FORMATS: Record<PixKeyType, (key: string) => boolean> = {
  CPF: (key) => /^[0-9]{11}$/.test(key),
  CNPJ: (key) => /^[0-9]{14}$/.test(key),
  EMAIL: isEmailAddress,
  PHONE: (key) => /^(?:\+55)?[0-9]{10,11}$/.test(key),
  RANDOM: (key) => /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/.test(key),
};

/** Undefined when `key` is a valid key of `type`, else the 400 message naming the field. */
export function pixKeyError(type: PixKeyType, key: string): string | undefined {
  return KEY_FORMATS[type](key) ? undefined : `pix_key is not a valid ${type} key`;
}
