import { createHmac, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { verifyCallback } from '../../examples/verify-callback-signature';
import {
  callbackSecretProblem,
  generateCallbackSecret,
  signCallback,
} from '../../src/adapters/callbacks/signature';
import {
  callbackAttemptSchedule,
  callbackBody,
  callbackEventFor,
  callbackEventId,
  DEFAULT_CALLBACK_RETRY,
  resolveCallbackRetry,
} from '../../src/domain/callback-event';
import { toPayoutResponse } from '../../src/domain/payout';
import { DEFAULT_NETWORK } from '../support/network';
import { completedPayout } from '../support/payouts';

const secret = generateCallbackSecret();
const body = JSON.stringify({ event: 'payout.completed', payout: { id: 'p1', pix_key: 'joão@example.com' } });
const eventId = 'evt_p1_completed';
const now = () => Math.floor(Date.now() / 1000);

describe('callback signature: Standard Webhooks (sender) and the partner verification example', () => {
  it('sends webhook-id, webhook-timestamp and webhook-signature = v1,<base64 HMAC-SHA256(id.timestamp.body)>', () => {
    const t = 1_800_000_000;
    const headers = signCallback(secret, eventId, t, body);
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    const mac = createHmac('sha256', key).update(`${eventId}.${t}.${body}`).digest('base64');
    expect(headers).toEqual({
      'webhook-id': eventId,
      'webhook-timestamp': String(t),
      'webhook-signature': `v1,${mac}`,
    });
  });

  it('verifies with the standardwebhooks package, as a partner does, over a Buffer or a string', () => {
    const headers = signCallback(secret, eventId, now(), body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    for (const rawBody of [Buffer.from(body), body])
      expect(verifyCallback({ rawBody, headers, secret })).toEqual({
        valid: true,
        eventId,
        callback: JSON.parse(body),
      });
  });

  it('refuses a changed body, another secret, another event id or a changed timestamp', () => {
    const headers = signCallback(secret, eventId, now(), body);
    const check = (o: { rawBody?: string; headers?: Record<string, string>; secret?: string }) =>
      verifyCallback({
        rawBody: o.rawBody ?? body,
        headers: o.headers ?? headers,
        secret: o.secret ?? secret,
      });
    expect(check({ rawBody: body.replace('p1', 'p2') }).valid).toBe(false);
    expect(check({ rawBody: `${body} ` }).valid).toBe(false);
    expect(check({ secret: generateCallbackSecret() }).valid).toBe(false);
    expect(check({ headers: { ...headers, 'webhook-id': 'evt_p2_completed' } }).valid).toBe(false);
    expect(
      check({
        headers: { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) + 1) },
      }).valid,
    ).toBe(false);
  });

  it('refuses a signature older or newer than the library tolerance (replay)', () => {
    for (const t of [now() - 3600, now() + 3600]) {
      const headers = signCallback(secret, eventId, t, body);
      expect(verifyCallback({ rawBody: body, headers, secret })).toMatchObject({ valid: false });
    }
  });

  it('refuses missing headers', () => {
    const headers = signCallback(secret, eventId, now(), body);
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const without: Record<string, string> = { ...headers };
      delete without[name];
      expect(verifyCallback({ rawBody: body, headers: without, secret })).toEqual({
        valid: false,
        reason: `missing ${name} header`,
      });
    }
  });

  it('generates whsec_ secrets of 32 random bytes and refuses what a library could not use', () => {
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(generateCallbackSecret()).not.toBe(secret);
    expect(callbackSecretProblem(secret)).toBeUndefined();
    expect(callbackSecretProblem(`whsec_${randomBytes(24).toString('base64')}`)).toBeUndefined();
    expect(callbackSecretProblem('hunter2')).toMatch(/must start with whsec_/);
    expect(callbackSecretProblem('whsec_not base64!')).toMatch(/base64/);
    expect(callbackSecretProblem(`whsec_${randomBytes(8).toString('base64')}`)).toMatch(
      /24 to 64 random bytes/,
    );
  });
});

describe('callback event', () => {
  const record = completedPayout({ providerChargeId: 'chg_1' });

  it('names the event of a terminal status only, with a stable id', () => {
    expect(callbackEventFor('COMPLETED')).toBe('payout.completed');
    expect(callbackEventFor('FAILED')).toBe('payout.failed');
    expect(callbackEventFor('PENDING')).toBeNull();
    expect(callbackEventFor('PROCESSING')).toBeNull();
    expect(callbackEventId(record.id, 'payout.completed')).toBe(`evt_${record.id}_completed`);
    expect(callbackEventId(record.id, 'payout.failed')).toBe(`evt_${record.id}_failed`);
  });

  it('carries the payout in the one partner-facing shape, without internal fields', () => {
    const parsed = JSON.parse(callbackBody('payout.completed', record, DEFAULT_NETWORK)) as Record<
      string,
      unknown
    >;
    expect(parsed).toEqual({ event: 'payout.completed', payout: toPayoutResponse(record, DEFAULT_NETWORK) });
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
