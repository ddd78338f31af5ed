/**
 * How long a replaced credential (a partner's API key, a callback signing secret) stays valid
 * beside its successor: long enough for the partner to deploy the new one, never open-ended.
 */
export const MAX_OVERLAP_SECONDS = 30 * 24 * 3600;

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

export class OverlapError extends Error {}

/** `0`, `90s`, `30m`, `24h`, `7d` in seconds; at most MAX_OVERLAP_SECONDS. */
export function parseOverlap(text: string): number {
  const match = /^([0-9]{1,7})([smhd]?)$/.exec(text.trim());
  if (!match || (match[2] === '' && match[1] !== '0'))
    throw new OverlapError('overlap must be 0 or a whole number with s, m, h or d (e.g. 24h, 7d)');
  const seconds = Number(match[1]) * (UNIT_SECONDS[match[2]!] ?? 0);
  if (seconds > MAX_OVERLAP_SECONDS) throw new OverlapError('overlap must be at most 30d');
  return seconds;
}
