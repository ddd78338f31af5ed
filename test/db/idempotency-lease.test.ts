import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import {
  claimIdempotencyKey,
  endIdempotencyLease,
  markIdempotencyKeyRecorded,
  markIdempotencyKeyRefused,
  releaseIdempotencyKey,
  renewIdempotencyClaim,
  type ClaimRef,
  type IdempotencyClaim,
} from '../../src/adapters/db/idempotency-repo';
import { createPartner } from '../../src/adapters/db/partners-repo';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { CLAIM_LEASE_SECONDS, CLAIM_RENEW_MS, holdClaim } from '../../src/api/payouts/claim-lease';
import { IdempotencyConflictError } from '../../src/domain/payout-request-errors';
import { testDatabaseUrl } from '../support/env';
import { until } from '../support/until';

// The Idempotency-Key claim as a lease with a fencing token (docs/decisions.md D73), on the real
// PostgreSQL: a claim not renewed for CLAIM_LEASE_SECONDS is taken over (same payout, same workflow
// id, a new token); one renewed is not; a holder fenced out by a takeover changes nothing any more.
// Lease times are the database's and are waited for, never faked.

const LEASE_MS = CLAIM_LEASE_SECONDS * 1000;

describe('Idempotency-Key claim lease (idempotency-repo, claim-lease)', () => {
  let db: Db;
  let partnerId: string;

  beforeAll(async () => {
    db = createPool(testDatabaseUrl(), 4);
    partnerId = (await createPartner(db, 'claim lease')).partner.id;
  });
  afterAll(() => db?.end());

  const claim = (key: string, payoutId = randomUUID()) =>
    claimIdempotencyKey(db, {
      partnerId,
      key,
      newPayoutId: payoutId,
      newWorkflowId: `payout-${partnerId}-idem-${key}-${payoutId.slice(0, 8)}`,
      ttlSeconds: 24 * 60 * 60,
      leaseSeconds: CLAIM_LEASE_SECONDS,
    });

  function claimed(c: IdempotencyClaim) {
    if (c.kind !== 'claimed') throw new Error(`expected a claim, got ${JSON.stringify(c)}`);
    return c;
  }

  const refOf = (key: string, c: IdempotencyClaim): ClaimRef => ({ partnerId, key, token: claimed(c).token });

  async function row(key: string) {
    const { rows } = await db.query<{
      payout_id: string;
      state: string;
      refusal: string | null;
      claim_token: string | null;
      lease_until: Date | null;
    }>(
      `SELECT payout_id, state, refusal, claim_token, lease_until FROM idempotency_keys
        WHERE partner_id = $1 AND key = $2`,
      [partnerId, key],
    );
    return rows[0];
  }

  /** The lease ran out on the database's clock (used where the waiting itself is not under test). */
  const expireLease = (key: string) =>
    db.query(
      `UPDATE idempotency_keys SET lease_until = now() - interval '1 millisecond' WHERE partner_id = $1 AND key = $2`,
      [partnerId, key],
    );

  it('a claim not renewed for the lease time is taken over: resumed, same payout and workflow id, a new token', async () => {
    const key = `lapse-${randomUUID()}`;
    const sentAt = performance.now();
    const first = claimed(await claim(key));
    expect(first.resumed).toBeUndefined();
    expect(await claim(key)).toEqual({ kind: 'in_flight' });

    // Asked over and over: in flight until the lease has run out, then taken over.
    const second = await until(
      'the claim to be taken over',
      async () => {
        const c = await claim(key);
        return c.kind === 'in_flight' ? undefined : c;
      },
      { timeoutMs: LEASE_MS + 10_000, intervalMs: 20 },
    );
    const waited = performance.now() - sentAt;
    expect(second).toEqual({
      kind: 'claimed',
      payoutId: first.payoutId,
      workflowId: first.workflowId,
      token: expect.any(String),
      resumed: true,
    });
    expect(claimed(second).token).not.toBe(first.token);
    // Not before the lease ran out (the database set it after `sentAt`), and not long after.
    expect(waited).toBeGreaterThanOrEqual(LEASE_MS - 5);
    expect(waited).toBeLessThan(LEASE_MS + 2_000);
    expect(await row(key)).toMatchObject({ state: 'claimed', claim_token: claimed(second).token });
    // The new holder holds it in turn.
    expect(await claim(key)).toEqual({ kind: 'in_flight' });
  });

  it('a renewed claim is not taken over, however long it is held; once renewal stops, it is', async () => {
    const key = `renewed-${randomUUID()}`;
    const holder = refOf(key, await claim(key));
    const started = performance.now();
    let renewals = 0;
    // Twice the lease, renewed between every two other claimants, each of which is in flight.
    while (performance.now() - started < 2 * LEASE_MS) {
      expect(await renewIdempotencyClaim(db, holder, CLAIM_LEASE_SECONDS)).toBe(true);
      renewals += 1;
      expect(await claim(key)).toEqual({ kind: 'in_flight' });
      await new Promise((r) => setTimeout(r, CLAIM_RENEW_MS / 5));
    }
    expect(renewals).toBeGreaterThan(2 * (LEASE_MS / CLAIM_RENEW_MS));
    const taken = await until('the unrenewed claim to be taken over', async () => {
      const c = await claim(key);
      return c.kind === 'in_flight' ? undefined : c;
    });
    expect(taken).toMatchObject({ kind: 'claimed', resumed: true });
  });

  it("a holder fenced out by a takeover: its renewal, recorded, refused, release and end change nothing; the new holder's do", async () => {
    const key = `fenced-${randomUUID()}`;
    const first = await claim(key);
    const a = refOf(key, first);
    await expireLease(key);
    const second = claimed(await claim(key));
    expect(second).toMatchObject({ resumed: true, payoutId: claimed(first).payoutId });
    const b = refOf(key, second);
    const before = await row(key);

    expect(await renewIdempotencyClaim(db, a, CLAIM_LEASE_SECONDS)).toBe(false);
    expect(await markIdempotencyKeyRefused(db, a, 'receiver_failed_screening')).toBe(false);
    expect(await markIdempotencyKeyRecorded(db, a)).toBe(false);
    expect(await endIdempotencyLease(db, a)).toBe(false);
    // Above all, A never frees the key: a freed key would let a third request start a second
    // payout under a new workflow id while B may be starting this one.
    expect(await releaseIdempotencyKey(db, a)).toBe(false);
    expect(await row(key)).toEqual(before);
    expect(before).toMatchObject({ state: 'claimed', claim_token: b.token, refusal: null });
    expect(await claim(key)).toEqual({ kind: 'in_flight' });

    expect(await renewIdempotencyClaim(db, b, CLAIM_LEASE_SECONDS)).toBe(true);
    expect(await markIdempotencyKeyRecorded(db, b)).toBe(true);
    expect(await row(key)).toMatchObject({ state: 'recorded', payout_id: claimed(first).payoutId });
    // Recorded: nobody's release deletes it, the holder's included.
    expect(await releaseIdempotencyKey(db, b)).toBe(false);
    expect(await releaseIdempotencyKey(db, a)).toBe(false);
    expect(await claim(key)).toMatchObject({ kind: 'recorded', payoutId: claimed(first).payoutId });
  });

  it("the holder's release frees the key: the next claim is a new payout", async () => {
    const key = `release-${randomUUID()}`;
    const first = await claim(key);
    expect(await releaseIdempotencyKey(db, refOf(key, first))).toBe(true);
    const next = claimed(await claim(key));
    expect(next.resumed).toBeUndefined();
    expect(next.payoutId).not.toBe(claimed(first).payoutId);
  });

  it('a claim whose holder ended its lease is taken over at once, its payout kept', async () => {
    const key = `ended-${randomUUID()}`;
    const first = await claim(key);
    expect(await endIdempotencyLease(db, refOf(key, first))).toBe(true);
    expect(await claim(key)).toMatchObject({
      kind: 'claimed',
      resumed: true,
      payoutId: claimed(first).payoutId,
    });
  });

  it('a claim without a lease or token (before this migration, or an older api) is stale 60 s after claimed_at', async () => {
    const insert = async (key: string, age: string) => {
      const id = randomUUID();
      await db.query(
        `INSERT INTO idempotency_keys (partner_id, key, payout_id, workflow_id, state, claimed_at, expires_at)
         VALUES ($1, $2, $3, 'payout-older-api', 'claimed', now() - $4::interval, now() + interval '24 hours')`,
        [partnerId, key, id, age],
      );
      return id;
    };
    const young = `unleased-${randomUUID()}`;
    await insert(young, '59 seconds');
    expect(await claim(young)).toEqual({ kind: 'in_flight' });
    const old = `unleased-${randomUUID()}`;
    const id = await insert(old, '61 seconds');
    const taken = claimed(await claim(old));
    expect(taken).toMatchObject({ resumed: true, payoutId: id });
    // The takeover gives it a token and a lease: from now on it is a lease like any other.
    expect(await row(old)).toMatchObject({ claim_token: taken.token, lease_until: expect.any(Date) });
    expect(await claim(old)).toEqual({ kind: 'in_flight' });
  });

  describe('holdClaim: the request in flight renews its claim', () => {
    /** `db` with its renewal writes counted. */
    function watchedDb() {
      const watched = { renewals: 0 };
      const query = ((text: string, params?: unknown[]) => {
        if (text.includes('SET lease_until = now() + ')) watched.renewals += 1;
        return db.query(text, params);
      }) as Db['query'];
      return { db: { query } as unknown as Db, watched };
    }
    const logs: { o: Record<string, unknown>; msg: string }[] = [];
    const log = { warn: (o: object, msg: string) => logs.push({ o: o as Record<string, unknown>, msg }) };

    it('a request answered within CLAIM_RENEW_MS makes no renewal write, and confirm() needs none', async () => {
      const key = `fast-${randomUUID()}`;
      const sentAt = performance.now();
      const c = await claim(key);
      const { db: counted, watched } = watchedDb();
      const held = holdClaim(counted, refOf(key, c), sentAt, log, {});
      await held.confirm();
      expect(await held.record()).toBe(true);
      await held.end();
      await new Promise((r) => setTimeout(r, 2 * CLAIM_RENEW_MS));
      expect(watched.renewals).toBe(0);
      expect(await row(key)).toMatchObject({ state: 'recorded' });
    });

    it('a held claim is renewed every CLAIM_RENEW_MS and is not taken over past the lease; end() hands it over at once', async () => {
      const key = `held-${randomUUID()}`;
      const sentAt = performance.now();
      const c = await claim(key);
      const { db: counted, watched } = watchedDb();
      const held = holdClaim(counted, refOf(key, c), sentAt, log, {});
      try {
        await until(
          'the lease to be held past its own length',
          async () => {
            expect(await claim(key)).toEqual({ kind: 'in_flight' });
            return performance.now() - sentAt > LEASE_MS + CLAIM_RENEW_MS ? true : undefined;
          },
          { intervalMs: 100 },
        );
        expect(watched.renewals).toBeGreaterThanOrEqual(3);
        await held.confirm();
      } finally {
        await held.end();
      }
      expect(await claim(key)).toMatchObject({
        kind: 'claimed',
        resumed: true,
        payoutId: claimed(c).payoutId,
      });
    });

    it('an overtaken holder says so in its log, refuses to confirm (409), and its writes are no-ops', async () => {
      const key = `overtaken-${randomUUID()}`;
      const sentAt = performance.now();
      const first = await claim(key);
      logs.length = 0;
      const held = holdClaim(db, refOf(key, first), sentAt, log, { payoutId: claimed(first).payoutId });
      try {
        // As if the holder had stalled past its lease (a GC pause, a slow database): B takes over.
        await expireLease(key);
        const b = claimed(await claim(key));
        await until('the holder to notice', () =>
          logs.some((l) => l.o.event === 'idempotency_claim_lost') ? true : undefined,
        );
        expect(logs.find((l) => l.o.event === 'idempotency_claim_lost')?.o).toMatchObject({
          payoutId: claimed(first).payoutId,
          during: 'renewal',
        });
        await expect(held.confirm()).rejects.toBeInstanceOf(IdempotencyConflictError);
        expect(await held.release()).toBe(false);
        expect(await row(key)).toMatchObject({ state: 'claimed', claim_token: b.token });
      } finally {
        await held.end();
      }
      expect(await claim(key)).toEqual({ kind: 'in_flight' });
    });
  });
});
