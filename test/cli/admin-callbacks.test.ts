import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { generateCallbackSecret } from '../../src/adapters/callbacks/signature';
import { createSecretBox } from '../../src/adapters/secrets/secret-box';
import path from 'node:path';
import { recordCallbackAttempt, closeCallbackEvent } from '../../src/adapters/db/callbacks-repo';
import { findPartnerCallback } from '../../src/adapters/db/partners-repo';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { callbackEventId } from '../../src/domain/callback-event';
import { testDatabaseUrl } from '../support/env';
import { compiledEntry } from '../support/compiled';
import { partnerWithCallback } from '../callbacks/fixtures';
import { payloadKeysOf } from '../../src/main/wiring';

const ROOT = path.resolve(__dirname, '../..');
const payloadKey = randomBytes(32).toString('base64');

/** The admin CLI as the operator runs it, against the test database. */
async function admin(
  args: string[],
  env: Record<string, string> = {},
  stdin = '',
): Promise<{ code: number; stdout: string; stderr: string }> {
  const entry = await compiledEntry('src/main/admin.ts');
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [entry, ...args],
      {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: testDatabaseUrl(), NODE_ENV: 'development', ...env },
      },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end(stdin);
  });
}

describe('admin CLI: callbacks', () => {
  let db: Db;
  beforeAll(() => {
    db = createPool(testDatabaseUrl(), 2);
  });
  afterAll(() => db?.end());

  it('set-callback refuses private, link-local and loopback URLs unless allowed, before storing anything', async () => {
    const id = await partnerWithCallback(db);
    // One at a time: each CLI run migrates first, and node-pg-migrate refuses to run concurrently.
    const privateNet = await admin(['partner', 'set-callback', '--id', id, '--url', 'https://10.1.2.3/cb']);
    const metadata = await admin([
      'partner',
      'set-callback',
      '--id',
      id,
      '--url',
      'https://169.254.169.254/latest',
    ]);
    const loopback = await admin([
      'partner',
      'set-callback',
      '--id',
      id,
      '--url',
      'http://127.0.0.1:8080/cb',
    ]);
    const secret = generateCallbackSecret();
    const allowed = await admin(
      ['partner', 'set-callback', '--id', id, '--url', 'http://127.0.0.1:8080/cb', '--secret-stdin'],
      { CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true', PAYLOAD_ENCRYPTION_KEY: payloadKey },
      `${secret}\n`,
    );
    expect(privateNet).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--url refused: .*private address/),
    });
    expect(metadata).toMatchObject({ code: 2, stderr: expect.stringMatching(/link-local address/) });
    expect(loopback).toMatchObject({ code: 2, stderr: expect.stringMatching(/loopback address/) });
    expect(allowed.code).toBe(0);
    expect(JSON.parse(allowed.stdout)).toEqual({ partner_id: id, callback_url: 'http://127.0.0.1:8080/cb' });
    expect(
      await findPartnerCallback(
        db,
        id,
        createSecretBox(payloadKeysOf({ PAYLOAD_ENCRYPTION_KEY: payloadKey })),
      ),
    ).toEqual({
      url: 'http://127.0.0.1:8080/cb',
      secret,
    });

    // A name without DNS yet is accepted: every send resolves and checks it again.
    const pending = await admin(
      ['partner', 'set-callback', '--id', id, '--url', 'https://hooks.partner.invalid/cb'],
      { PAYLOAD_ENCRYPTION_KEY: payloadKey },
    );
    expect(pending).toMatchObject({ code: 0, stderr: '' });
  }, 60_000);

  it('partner deliveries lists each event with every attempt, newest event first', async () => {
    const partnerId = await partnerWithCallback(db);
    const delivered = { eventId: '', partnerId, payoutId: randomUUID(), event: 'payout.completed' as const };
    delivered.eventId = callbackEventId(delivered.payoutId, delivered.event);
    const startedAt = new Date('2026-01-01T00:00:00Z');
    await recordCallbackAttempt(db, {
      ...delivered,
      attempt: 1,
      url: 'https://hooks.partner.example/cb',
      delivered: false,
      error: 'timed out after 10000 ms',
      startedAt,
      durationMs: 10_000,
    });
    await recordCallbackAttempt(db, {
      ...delivered,
      attempt: 2,
      url: 'https://hooks.partner.example/cb',
      delivered: true,
      statusCode: 200,
      startedAt: new Date(startedAt.getTime() + 20_000),
      durationMs: 35,
    });
    const skippedPayout = randomUUID();
    await closeCallbackEvent(
      db,
      {
        eventId: callbackEventId(skippedPayout, 'payout.failed'),
        partnerId,
        payoutId: skippedPayout,
        event: 'payout.failed',
      },
      'skipped',
    );

    const listed = await admin(['partner', 'deliveries', '--id', partnerId]);
    const badLimit = await admin(['partner', 'deliveries', '--id', partnerId, '--limit', '0']);

    expect(listed.code).toBe(0);
    const out = JSON.parse(listed.stdout) as { partner_id: string; events: Record<string, unknown>[] };
    expect(out.partner_id).toBe(partnerId);
    expect(out.events.map((e) => [e.payout_id, e.state])).toEqual([
      [skippedPayout, 'skipped'],
      [delivered.payoutId, 'delivered'],
    ]);
    expect(out.events[1]).toMatchObject({
      event_id: delivered.eventId,
      event: 'payout.completed',
      attempt_count: 2,
      attempts: [
        {
          attempt: 1,
          started_at: '2026-01-01T00:00:00.000Z',
          duration_ms: 10_000,
          url: 'https://hooks.partner.example/cb',
          status_code: null,
          error: 'timed out after 10000 ms',
          response_excerpt: null,
        },
        { attempt: 2, status_code: 200, error: null },
      ],
    });
    expect(badLimit).toMatchObject({ code: 2, stderr: expect.stringMatching(/--limit must be/) });
  }, 60_000);
});
