import { randomBytes } from 'node:crypto';
import { payloadKeys } from '../../src/adapters/secrets/payload-keys';
import { createSecretBox, SecretKeyError } from '../../src/adapters/secrets/secret-box';

const key = () => randomBytes(32).toString('base64');

describe('secret box (callback secrets at rest)', () => {
  const current = key();
  const box = createSecretBox(payloadKeys(current));

  it('seals with the payload key, never leaving the secret readable, and opens it again', () => {
    const sealed = box.seal('whsec_abc', 'partner-1');
    expect(sealed).toMatch(/^enc:v1:[0-9a-f]{16}:/);
    expect(sealed).not.toContain('whsec_abc');
    expect(box.seal('whsec_abc', 'partner-1')).not.toBe(sealed);
    expect(box.open(sealed, 'partner-1')).toBe('whsec_abc');
  });

  it('refuses a sealed secret moved to another partner, altered, or under an unknown key', () => {
    const sealed = box.seal('whsec_abc', 'partner-1');
    expect(() => box.open(sealed, 'partner-2')).toThrow(SecretKeyError);
    const altered = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'BB' : 'AA');
    expect(() => box.open(altered, 'partner-1')).toThrow(SecretKeyError);
    expect(() => createSecretBox(payloadKeys(key())).open(sealed, 'partner-1')).toThrow(/unknown key id/);
  });

  it('opens what a rotated-out key sealed while it is listed as a previous key', () => {
    const sealed = box.seal('whsec_abc', 'partner-1');
    const rotated = createSecretBox(payloadKeys(key(), current));
    expect(rotated.open(sealed, 'partner-1')).toBe('whsec_abc');
    expect(rotated.seal('whsec_abc', 'partner-1').split(':')[2]).not.toBe(sealed.split(':')[2]);
  });

  it('reads secrets stored before encryption as they are, and stores in clear only without a key', () => {
    expect(box.open('whsec_legacy', 'partner-1')).toBe('whsec_legacy');
    const keyless = createSecretBox(payloadKeys());
    expect(keyless.encrypts).toBe(false);
    expect(keyless.seal('whsec_abc', 'p')).toBe('whsec_abc');
    expect(() => keyless.open(box.seal('whsec_abc', 'p'), 'p')).toThrow(SecretKeyError);
  });
});
