import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
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
import {
  IdempotencyClaimUnconfirmedError,
  IdempotencyConflictError,
} from '../../src/domain/payout-request-errors';
import { createOwnDatabase } from '../support/database';
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

  // During the deploy that brings the lease, apis of the previous version run beside this one. Their
  // statements, as that version sends them (it knows neither claim_token nor lease_until):
  const previousApi = {
    takeOver: (key: string) =>
      db.query('UPDATE idempotency_keys SET claimed_at = now() WHERE partner_id = $1 AND key = $2', [
        partnerId,
        key,
      ]),
    claimExpired: (key: string, payoutId: string) =>
      db.query(
        `UPDATE idempotency_keys SET payout_id = $3, workflow_id = $4, state = 'claimed', refusal = NULL, claimed_at = now(),
                expires_at = now() + make_interval(secs => $5)
          WHERE partner_id = $1 AND key = $2`,
        [partnerId, key, payoutId, `payout-older-api-${payoutId.slice(0, 8)}`, 24 * 60 * 60],
      ),
    release: (key: string, payoutId: string) =>
      db.query(
        `DELETE FROM idempotency_keys WHERE partner_id = $1 AND key = $2 AND payout_id = $3 AND state = 'claimed'`,
        [partnerId, key, payoutId],
      ),
  };

  describe('an api of the previous version beside this one (a rolling deploy)', () => {
    it("its takeover of a lapsed lease makes a claim without lease or token: stale after 60 s for every api, the previous holder's token void", async () => {
      const key = `older-takeover-${randomUUID()}`;
      // A new api's claim made a minute ago, whose lease has run out (its request died, or is slow).
      const a: ClaimRef = { partnerId, key, token: randomUUID() };
      const payoutId = randomUUID();
      await db.query(
        `INSERT INTO idempotency_keys (partner_id, key, payout_id, workflow_id, state, claimed_at, expires_at,
                                       claim_token, lease_until)
         VALUES ($1, $2, $3, 'payout-new-api', 'claimed', now() - interval '61 seconds', now() + interval '24 hours',
                 $4, now() - interval '1 second')`,
        [partnerId, key, payoutId, a.token],
      );
      // The older api's request takes it over by its own rule (claimed_at a minute old).
      await previousApi.takeOver(key);
      expect(await row(key)).toMatchObject({ state: 'claimed', claim_token: null, lease_until: null });
      // A new api does not take it over from under the older request: it is in flight for 60 s.
      expect(await claim(key)).toEqual({ kind: 'in_flight' });
      // The holder it was taken from is fenced out.
      expect(await renewIdempotencyClaim(db, a, CLAIM_LEASE_SECONDS)).toBe(false);
      expect(await markIdempotencyKeyRecorded(db, a)).toBe(false);
      expect(await releaseIdempotencyKey(db, a)).toBe(false);
      expect(await row(key)).toMatchObject({ state: 'claimed', payout_id: payoutId, claim_token: null });
      // The older request, the holder now, still releases it.
      expect((await previousApi.release(key, payoutId)).rowCount).toBe(1);
      expect(await row(key)).toBeUndefined();
    });

    it('its new claim of an expired key has no lease or token either', async () => {
      const key = `older-expired-${randomUUID()}`;
      expect(await markIdempotencyKeyRecorded(db, refOf(key, await claim(key)))).toBe(true);
      await db.query(
        `UPDATE idempotency_keys SET expires_at = now() - interval '1 second', lease_until = now() - interval '24 hours'
          WHERE partner_id = $1 AND key = $2`,
        [partnerId, key],
      );
      const payoutId = randomUUID();
      await previousApi.claimExpired(key, payoutId);
      expect(await row(key)).toMatchObject({
        state: 'claimed',
        payout_id: payoutId,
        claim_token: null,
        lease_until: null,
      });
      expect(await claim(key)).toEqual({ kind: 'in_flight' });
    });

    it('its release never deletes a claim a new api took over from it; the new holder still releases it', async () => {
      const key = `older-release-${randomUUID()}`;
      const payoutId = randomUUID();
      await db.query(
        `INSERT INTO idempotency_keys (partner_id, key, payout_id, workflow_id, state, claimed_at, expires_at)
         VALUES ($1, $2, $3, 'payout-older-api', 'claimed', now() - interval '61 seconds', now() + interval '24 hours')`,
        [partnerId, key, payoutId],
      );
      const b = claimed(await claim(key));
      expect(b).toMatchObject({ resumed: true, payoutId });
      // The older request, overtaken, is refused (say, no quote) and releases the key by payout id:
      // deleted, the key would give the next request a new payout under a new workflow id while B may
      // be starting this one.
      expect((await previousApi.release(key, payoutId)).rowCount).toBe(0);
      expect(await row(key)).toMatchObject({ state: 'claimed', payout_id: payoutId, claim_token: b.token });
      expect(await claim(key)).toEqual({ kind: 'in_flight' });
      // Its own release, under its token, deletes it.
      expect(await releaseIdempotencyKey(db, refOf(key, b))).toBe(true);
      expect(await row(key)).toBeUndefined();

      // A claim without a token (the older api's own) is released by it as before.
      const own = `older-own-${randomUUID()}`;
      await db.query(
        `INSERT INTO idempotency_keys (partner_id, key, payout_id, workflow_id, state, claimed_at, expires_at)
         VALUES ($1, $2, $3, 'payout-older-api', 'claimed', now(), now() + interval '24 hours')`,
        [partnerId, own, payoutId],
      );
      expect((await previousApi.release(own, payoutId)).rowCount).toBe(1);
    });
  });

  it('the migration goes down and up again', async () => {
    const own = await createOwnDatabase();
    const sql = readFileSync(
      path.join(__dirname, '../../migrations/1795430000000_idempotency-claim-lease.sql'),
      'utf8',
    );
    const [up, down] = sql.split('-- Down Migration');
    const ownDb = createPool(own.url, 1);
    try {
      await ownDb.query(down!);
      await ownDb.query(up!);
      const { rows } = await ownDb.query<{ tgname: string }>(
        `SELECT tgname FROM pg_trigger WHERE tgrelid = 'idempotency_keys'::regclass AND NOT tgisinternal ORDER BY tgname`,
      );
      expect(rows.map((r) => r.tgname)).toEqual([
        'idempotency_keys_fenced_delete',
        'idempotency_keys_unleased_claim',
      ]);
    } finally {
      await ownDb.end();
      await own.drop();
    }
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

    it('a claim slow to answer is renewed at once: its lease does not run out before the first renewal', async () => {
      const key = `slow-claim-${randomUUID()}`;
      // Another transaction inserting the same key holds ours back (a lock wait), then gives up: our
      // claim's lease runs from its transaction's start, but it answers 1.7 s later.
      const blocker = await db.connect();
      let held: ReturnType<typeof holdClaim> | undefined;
      try {
        await blocker.query('BEGIN');
        await blocker.query(
          `INSERT INTO idempotency_keys (partner_id, key, payout_id, workflow_id, state, claimed_at, expires_at)
           VALUES ($1, $2, $3, 'payout-blocker', 'claimed', now(), now() + interval '24 hours')`,
          [partnerId, key, randomUUID()],
        );
        const sentAt = performance.now();
        const pending = claim(key);
        await new Promise((r) => setTimeout(r, LEASE_MS - 300));
        await blocker.query('ROLLBACK');
        const c = await pending;
        expect(performance.now() - sentAt).toBeGreaterThan(LEASE_MS - 300);
        held = holdClaim(db, refOf(key, c), sentAt, log, {});
        // Watched past the end of the first lease: renewed in time, it never runs out.
        while (performance.now() - sentAt < LEASE_MS + CLAIM_RENEW_MS) {
          const { rows } = await db.query<{ lapsed: boolean }>(
            'SELECT lease_until <= now() AS lapsed FROM idempotency_keys WHERE partner_id = $1 AND key = $2',
            [partnerId, key],
          );
          expect(rows[0]).toEqual({ lapsed: false });
          await new Promise((r) => setTimeout(r, 20));
        }
        expect(await claim(key)).toEqual({ kind: 'in_flight' });
      } finally {
        blocker.release();
        await held?.end();
      }
    });

    it('renewals each slower than the start margin: confirm() refuses with IdempotencyClaimUnconfirmedError (503), and end() hands the claim on', async () => {
      const key = `slow-renewals-${randomUUID()}`;
      // Every renewal reaches the database 1.3 s after it was sent: more than the 1 s margin, by more
      // than a timer may fire early.
      const slow = ((text: string, params?: unknown[]) =>
        text.includes('SET lease_until = now() + ')
          ? new Promise((r) => setTimeout(r, 1_300)).then(() => db.query(text, params))
          : db.query(text, params)) as Db['query'];
      const sentAt = performance.now();
      const c = await claim(key);
      const held = holdClaim({ query: slow } as unknown as Db, refOf(key, c), sentAt, log, {});
      try {
        // Confirmed only once the lease may have less than the margin left, on the clock confirm()
        // reads: a timer alone can fire early by that clock (the event loop's cached time is stale
        // after a busy turn), and then confirm() rightly had the margin (a CI run saw it).
        await until(
          'the lease to have less than the margin left',
          () => (performance.now() - sentAt > LEASE_MS / 2 + 20 ? true : undefined),
          { intervalMs: 20 },
        );
        await expect(held.confirm()).rejects.toBeInstanceOf(IdempotencyClaimUnconfirmedError);
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
