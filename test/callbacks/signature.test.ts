import { createHmac } from 'node:crypto';
import { verifyCallbackSignature } from '../../examples/verify-callback-signature';
import { signCallback } from '../../src/adapters/callbacks/signature';
import {
  callbackAttemptSchedule,
  callbackBody,
  callbackEventFor,
  callbackEventId,
  DEFAULT_CALLBACK_RETRY,
  resolveCallbackRetry,
} from '../../src/domain/callback-event';
import { toPayoutResponse, type PayoutRecord } from '../../src/domain/payout';

const secret = 'whsec_test_secret';
const body = JSON.stringify({ event: 'payout.completed', payout: { id: 'p1', pix_key: 'joão@example.com' } });
const t = 1_800_000_000;

describe('callback signature (sender) and the partner verification helper', () => {
  it('produces t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>', () => {
    const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
    expect(signCallback(secret, t, body)).toBe(`t=${t},v1=${expected}`);
  });

  it('verifies over the raw bytes, given as a Buffer or a string', () => {
    const header = signCallback(secret, t, body);
    expect(
      verifyCallbackSignature({ rawBody: Buffer.from(body), signatureHeader: header, secret, nowSeconds: t }),
    ).toEqual({
      valid: true,
      timestamp: t,
    });
    expect(
      verifyCallbackSignature({ rawBody: body, signatureHeader: header, secret, nowSeconds: t + 299 }).valid,
    ).toBe(true);
  });

  it('refuses a changed body, a wrong secret, or a changed timestamp', () => {
    const header = signCallback(secret, t, body);
    const check = (o: { rawBody?: string; header?: string; secret?: string }) =>
      verifyCallbackSignature({
        rawBody: o.rawBody ?? body,
        signatureHeader: o.header ?? header,
        secret: o.secret ?? secret,
        nowSeconds: t,
      });
    expect(check({ rawBody: body.replace('p1', 'p2') })).toEqual({
      valid: false,
      reason: 'signature_mismatch',
    });
    expect(check({ rawBody: `${body} ` })).toEqual({ valid: false, reason: 'signature_mismatch' });
    expect(check({ secret: 'whsec_other' })).toEqual({ valid: false, reason: 'signature_mismatch' });
    expect(check({ header: header.replace(`t=${t}`, `t=${t + 1}`) })).toEqual({
      valid: false,
      reason: 'signature_mismatch',
    });
  });

  it('refuses a signature outside the tolerance window, in either direction (replay)', () => {
    const header = signCallback(secret, t, body);
    for (const nowSeconds of [t + 301, t - 301, t + 86_400]) {
      expect(verifyCallbackSignature({ rawBody: body, signatureHeader: header, secret, nowSeconds })).toEqual(
        {
          valid: false,
          reason: 'timestamp_out_of_tolerance',
        },
      );
    }
    expect(
      verifyCallbackSignature({
        rawBody: body,
        signatureHeader: header,
        secret,
        nowSeconds: t + 3600,
        toleranceSeconds: 3600,
      }).valid,
    ).toBe(true);
  });

  it('refuses missing and malformed headers, and accepts any one matching v1 of several', () => {
    const v1 = signCallback(secret, t, body).split('v1=')[1]!;
    const verify = (signatureHeader: string | undefined) =>
      verifyCallbackSignature({ rawBody: body, signatureHeader, secret, nowSeconds: t });
    expect(verify(undefined)).toEqual({ valid: false, reason: 'missing_signature' });
    expect(verify('')).toEqual({ valid: false, reason: 'missing_signature' });
    for (const bad of [`v1=${v1}`, `t=${t}`, `t=abc,v1=${v1}`, `t=${t},v1=${v1.slice(2)}`, 'garbage']) {
      expect(verify(bad)).toEqual({ valid: false, reason: 'malformed_signature' });
    }
    expect(verify(`t=${t}, v1=${'0'.repeat(64)}, v1=${v1.toUpperCase()}`).valid).toBe(true);
  });
});

describe('callback event', () => {
  const record: PayoutRecord = {
    id: '0b8f7a0e-6d1c-4a35-9d7e-3f2a1c5b9e01',
    partnerId: '5d0c3b8e-1f2a-4c6d-8e9f-0a1b2c3d4e5f',
    status: 'COMPLETED',
    amountCentavos: '10000',
    minAmountUsdtUnits: '17152658',
    settledAmountUsdtUnits: '17825311',
    pixKey: '12345678901',
    pixKeyType: 'CPF',
    receiverWallet: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    pixCopyPaste: '000201...',
    providerChargeId: 'chg_1',
    blockchainTxId: '0xabc',
    paidAt: '2026-01-01T00:00:01.000Z',
    confirmedAt: '2026-01-01T00:00:05.000Z',
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:05.000Z',
    version: 4,
  };

  it('names the event of a terminal status only, with a stable id', () => {
    expect(callbackEventFor('COMPLETED')).toBe('payout.completed');
    expect(callbackEventFor('FAILED')).toBe('payout.failed');
    expect(callbackEventFor('PENDING')).toBeNull();
    expect(callbackEventFor('PROCESSING')).toBeNull();
    expect(callbackEventId(record.id, 'payout.completed')).toBe(`evt_${record.id}_completed`);
    expect(callbackEventId(record.id, 'payout.failed')).toBe(`evt_${record.id}_failed`);
  });

  it('carries the payout in the one partner-facing shape, without internal fields', () => {
    const parsed = JSON.parse(callbackBody('payout.completed', record)) as Record<string, unknown>;
    expect(parsed).toEqual({ event: 'payout.completed', payout: toPayoutResponse(record) });
    expect(JSON.stringify(parsed)).not.toMatch(/providerChargeId|chg_1|version/);
  });

  it('retries for 24 h: 10 s doubling to hourly, 33 attempts, the last one at the deadline', () => {
    const schedule = callbackAttemptSchedule(DEFAULT_CALLBACK_RETRY);
    expect(schedule.slice(0, 5)).toEqual([0, 10_000, 30_000, 70_000, 150_000]);
    expect(schedule).toHaveLength(33);
    expect(schedule.at(-1)).toBe(24 * 3_600_000);
    const gaps = schedule.slice(1).map((at, i) => at - schedule[i]!);
    expect(Math.max(...gaps)).toBe(3_600_000);
  });

  it('refuses retry settings that could not work', () => {
    expect(() => resolveCallbackRetry({ initialIntervalMs: 0 })).toThrow(RangeError);
    expect(() => resolveCallbackRetry({ backoffCoefficient: 0.5 })).toThrow(RangeError);
    expect(() => resolveCallbackRetry({ giveUpAfterMs: Number.NaN })).toThrow(RangeError);
    expect(resolveCallbackRetry({ initialIntervalMs: 100 })).toEqual({
      ...DEFAULT_CALLBACK_RETRY,
      initialIntervalMs: 100,
    });
  });
});
