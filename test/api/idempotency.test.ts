import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { denyWallet } from '../../src/adapters/db/screening-denylist-repo';
import { randomUUID } from 'node:crypto';
import { createPool, type Db } from '../../src/adapters/db/pool';
import { CLAIM_LEASE_SECONDS, CLAIM_RENEW_MS } from '../../src/api/payouts/claim-lease';
import { configuredScreening, FIXED_QUOTE } from '../support/api';
import { useStack, VALID_PAYOUT } from '../support/stack';
import { until } from '../support/until';
import {
  countPayouts,
  expectError,
  expectErrorBody,
  parseRawResponse,
  post,
  rawRequest,
  type ApiResponse,
} from './helpers';

// Idempotency-Key on POST /v1/payouts (docs/api.md "Idempotency", docs/decisions.md D10).
describe('Idempotency-Key', () => {
  const stack = useStack({ proxyProvider: true });

  const idOf = (res: ApiResponse) => (res.json as { id: string }).id;
  const withKey = (apiKey: string, key: string, body: unknown = VALID_PAYOUT) =>
    post(stack.apiUrl, apiKey, body, { 'idempotency-key': key });

  async function keyRow(partnerId: string, key: string) {
    const { rows } = await stack.db.query<{ payout_id: string; state: string }>(
      'SELECT payout_id, state FROM idempotency_keys WHERE partner_id = $1 AND key = $2',
      [partnerId, key],
    );
    return rows[0];
  }

  it('a first use creates the payout (201, no Idempotent-Replayed header); a replay returns it with the header', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const first = await withKey(apiKey, 'order-1');
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(await keyRow(partnerId, 'order-1')).toEqual({ payout_id: idOf(first), state: 'recorded' });

    const replay = await withKey(apiKey, 'order-1');
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.json).toEqual(first.json);
    expect(await countPayouts(stack.db, partnerId)).toBe(1);
  });

  it.each([
    ['a different valid body', { ...VALID_PAYOUT, amount_brl: 5, pix_key_type: 'EMAIL', pix_key: 'a@b.co' }],
    ['a body failing validation', { amount_brl: -1 }],
    ['an empty object', {}],
    ['malformed JSON', '{"amount_brl": '],
    ['a body over 16 KiB', JSON.stringify({ padding: 'x'.repeat(20_000) })],
  ])('a replay ignores the body: %s', async (_what, body) => {
    const { partnerId, apiKey } = await stack.createPartner();
    const first = await withKey(apiKey, 'k');
    const replay = await withKey(apiKey, 'k', body);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.json).toEqual(first.json);
    expect(await countPayouts(stack.db, partnerId)).toBe(1);
  });

  it('a replay with a wrong content-type still replays', async () => {
    const { apiKey } = await stack.createPartner();
    const first = await withKey(apiKey, 'k');
    const replay = await post(stack.apiUrl, apiKey, 'x', {
      'idempotency-key': 'k',
      'content-type': 'text/plain',
    });
    expect(replay.status).toBe(201);
    expect(replay.json).toEqual(first.json);
  });

  it("a replay returns the payout's current state, not a snapshot of the first answer", async () => {
    const { apiKey } = await stack.createPartner();
    const first = await withKey(apiKey, 'k');
    await stack.pay((first.json as { pix_copy_paste: string }).pix_copy_paste);
    await stack.waitForStatus(apiKey, idOf(first), ['COMPLETED']);
    const replay = await withKey(apiKey, 'k');
    expect(replay.status).toBe(201);
    expect(replay.json).toMatchObject({ id: idOf(first), status: 'COMPLETED' });
  });

  it('requests without a key are never de-duplicated', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const [a, b] = await Promise.all([
      post(stack.apiUrl, apiKey, VALID_PAYOUT),
      post(stack.apiUrl, apiKey, VALID_PAYOUT),
    ]);
    expect(idOf(a)).not.toBe(idOf(b));
    expect(await countPayouts(stack.db, partnerId)).toBe(2);
  });

  it('keys are scoped per partner: the same key gives each partner its own payout', async () => {
    const a = await stack.createPartner();
    const b = await stack.createPartner();
    const key = `shared-${randomUUID()}`;
    const [ra, rb] = await Promise.all([withKey(a.apiKey, key), withKey(b.apiKey, key)]);
    expect(ra.status).toBe(201);
    expect(rb.status).toBe(201);
    expect(idOf(ra)).not.toBe(idOf(rb));
    expect(ra.json).toMatchObject({ partner_id: a.partnerId });
    expect(rb.json).toMatchObject({ partner_id: b.partnerId });
    expect((await withKey(a.apiKey, key)).json).toEqual(ra.json);
    expect((await withKey(b.apiKey, key)).json).toEqual(rb.json);
  });

  describe('key format: 1-255 printable ASCII characters', () => {
    it.each([
      ['empty', ''],
      ['256 characters', 'k'.repeat(256)],
      ['a non-ASCII character', 'pedido-ç'],
      ['a control character (tab)', 'a\tb'],
    ])('%s -> 400', async (_what, key) => {
      const { partnerId, apiKey } = await stack.createPartner();
      expectError(
        await withKey(apiKey, key),
        400,
        'Idempotency-Key must be 1-255 printable ASCII characters',
      );
      expect(await countPayouts(stack.db, partnerId)).toBe(0);
    });

    it('a DEL byte (no HTTP client sends it; raw) -> 400 with the error shape', async () => {
      const { partnerId, apiKey } = await stack.createPartner();
      const body = JSON.stringify(VALID_PAYOUT);
      const res = parseRawResponse(
        await rawRequest(
          stack.apiUrl,
          `POST /v1/payouts HTTP/1.1\r\nHost: x\r\nX-API-Key: ${apiKey}\r\nIdempotency-Key: a\x7fb\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
        ),
      );
      expect(res.status).toBe(400);
      expectErrorBody(res);
      expect(await countPayouts(stack.db, partnerId)).toBe(0);
    });

    it.each([
      ['one character', 'a'],
      ['255 characters', 'k'.repeat(255)],
      ['spaces and punctuation inside', 'order #42 / "A" ~ {x}'],
      ['a UUID', randomUUID()],
    ])('%s is accepted', async (_what, key) => {
      const { apiKey } = await stack.createPartner();
      const first = await withKey(apiKey, key);
      expect(first.status).toBe(201);
      const replay = await withKey(apiKey, key);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(idOf(replay)).toBe(idOf(first));
    });

    it('keys are case-sensitive opaque strings', async () => {
      const { apiKey } = await stack.createPartner();
      const upper = await withKey(apiKey, 'ORDER-1');
      const lower = await withKey(apiKey, 'order-1');
      expect(idOf(upper)).not.toBe(idOf(lower));
    });
  });

  it('a storm of 20 concurrent requests with one key makes exactly one payout and one PIX charge', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const results = await Promise.all(Array.from({ length: 20 }, () => withKey(apiKey, 'storm')));

    const created = results.filter((r) => r.status === 201);
    const conflicts = results.filter((r) => r.status === 409);
    expect(created.length + conflicts.length).toBe(20);
    expect(created.length).toBeGreaterThanOrEqual(1);
    for (const c of conflicts) expectError(c, 409, 'idempotency conflict');
    expect(new Set(created.map(idOf)).size).toBe(1);
    expect(new Set(created.map((r) => (r.json as { pix_copy_paste: string }).pix_copy_paste)).size).toBe(1);
    expect(created.filter((r) => r.headers.get('idempotent-replayed') === null)).toHaveLength(1);

    expect(await countPayouts(stack.db, partnerId)).toBe(1);
    const workflows = await stack.db.query('SELECT DISTINCT workflow_id FROM payouts WHERE partner_id = $1', [
      partnerId,
    ]);
    expect(workflows.rows).toHaveLength(1);
    // Counted at the provider itself: one charge was created for it, and none for anything else.
    const charges = stack.providerProxy!.chargesCreated();
    expect(charges.get(idOf(created[0]!))).toBe(1);
    const { rows: others } = await stack.db.query<{ id: string }>('SELECT id FROM payouts');
    const known = new Set(others.map((r) => r.id));
    expect([...charges.keys()].filter((id) => !known.has(id))).toEqual([]);

    // Settled, every later retry is a replay of the one payout.
    const after = await withKey(apiKey, 'storm');
    expect(after.headers.get('idempotent-replayed')).toBe('true');
    expect(idOf(after)).toBe(idOf(created[0]!));
  });

  /** A claim whose request is in flight: it renews its lease, which runs for a while yet. */
  async function claimInFlight(partnerId: string, key: string): Promise<string> {
    const token = randomUUID();
    await stack.db.query(
      `INSERT INTO idempotency_keys (partner_id, key, payout_id, workflow_id, state, claimed_at, expires_at,
                                     claim_token, lease_until)
       VALUES ($1, $2, $3, 'payout-in-flight', 'claimed', now(), now() + interval '24 hours',
               $4, now() + interval '1 minute')`,
      [partnerId, key, randomUUID(), token],
    );
    return token;
  }

  it('a key claimed by a request still in flight -> 409 "idempotency conflict"', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    await claimInFlight(partnerId, 'busy');
    expectError(await withKey(apiKey, 'busy'), 409, 'idempotency conflict');
    expect(await countPayouts(stack.db, partnerId)).toBe(0);
  });

  it('a key in flight answers 409 before the minimum check: a duplicate never gets a different answer', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    await claimInFlight(partnerId, 'busy');
    expectError(
      await withKey(apiKey, 'busy', { ...VALID_PAYOUT, amount_brl: 0.01 }),
      409,
      'idempotency conflict',
    );
  });

  it('a request refused by the minimum check frees its key: the corrected retry creates the payout', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    expectError(
      await withKey(apiKey, 'too-small', { ...VALID_PAYOUT, amount_brl: 0.01 }),
      400,
      'amount_brl is too small: min_amount_usdt must be at least 0.01',
    );
    expect(await keyRow(partnerId, 'too-small')).toBeUndefined();
    const retried = await withKey(apiKey, 'too-small');
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
  });

  describe('when no quote is available', () => {
    let url: string;

    beforeAll(async () => {
      ({ url } = await stack.startApi({}, { quote: () => Promise.reject(new Error('provider down')) }));
    });

    it('a key in flight still answers 409', async () => {
      const { partnerId, apiKey } = await stack.createPartner();
      await claimInFlight(partnerId, 'busy');
      expectError(
        await post(url, apiKey, VALID_PAYOUT, { 'idempotency-key': 'busy' }),
        409,
        'idempotency conflict',
      );
    });

    it('a fresh key answers 503 and is freed for the retry', async () => {
      const { partnerId, apiKey } = await stack.createPartner();
      const res = await post(url, apiKey, VALID_PAYOUT, { 'idempotency-key': 'no-quote' });
      expectError(res, 503, 'quote unavailable, retry later');
      expect(await keyRow(partnerId, 'no-quote')).toBeUndefined();
      expect((await withKey(apiKey, 'no-quote')).status).toBe(201);
    });
  });

  it('a claim released between the conflict and the re-read is claimed again (never a 500)', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const token = await claimInFlight(partnerId, 'released');
    // Hold the row as a request about to release it would (naming its token, as a release does); the
    // POST's insert conflicts with it and its re-read (SELECT ... FOR UPDATE) then waits on this lock.
    const holder = await stack.db.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT set_config('idempotency.claim_token', $1, true)`, [token]);
      await holder.query('SELECT 1 FROM idempotency_keys WHERE partner_id = $1 AND key = $2 FOR UPDATE', [
        partnerId,
        'released',
      ]);
      const pending = withKey(apiKey, 'released');
      await waitForLockWaiter(holder);
      await holder.query('DELETE FROM idempotency_keys WHERE partner_id = $1 AND key = $2', [
        partnerId,
        'released',
      ]);
      await holder.query('COMMIT');
      const res = await pending;
      expect(res.status).toBe(201);
      expect(await keyRow(partnerId, 'released')).toEqual({ payout_id: idOf(res), state: 'recorded' });
    } finally {
      holder.release();
    }
  });

  /** Resolves once another backend waits on a lock held by `holder`'s backend (an observable event). */
  async function waitForLockWaiter(holder: { query: typeof stack.db.query }): Promise<void> {
    const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const pid = rows[0]!.pid;
    await until(
      'a request waiting on the held claim',
      async () => {
        const waiting = await stack.db.query(
          'SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
          [pid],
        );
        return waiting.rowCount ? true : undefined;
      },
      { intervalMs: 10 },
    );
  }

  it('a stale claim (its request died: its lease ran out) is taken over and completes the claimed payout', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const claimedId = randomUUID();
    await stack.db.query(
      `INSERT INTO idempotency_keys (partner_id, key, payout_id, workflow_id, state, claimed_at, expires_at,
                                     claim_token, lease_until)
       VALUES ($1, 'abandoned', $2, $3, 'claimed', now() - interval '5 seconds', now() + interval '24 hours',
               $4, now() - interval '1 second')`,
      [partnerId, claimedId, `payout-${partnerId}-idem-abandoned-${claimedId.slice(0, 8)}`, randomUUID()],
    );
    const res = await withKey(apiKey, 'abandoned');
    expect(res.status).toBe(201);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    expect(idOf(res)).toBe(claimedId);
    expect(await keyRow(partnerId, 'abandoned')).toEqual({ payout_id: claimedId, state: 'recorded' });
    expect(idOf(await withKey(apiKey, 'abandoned'))).toBe(claimedId);
  });

  it('a stale claim whose payout had started answers that payout, even if its receiver is listed since', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const wallet = privateKeyToAddress(generatePrivateKey());
    const first = await withKey(apiKey, 'started', { ...VALID_PAYOUT, receiver_wallet: wallet });
    expect(first.status).toBe(201);
    // The request died after starting the payout, before recording it; the wallet is listed since.
    await stack.db.query(
      `UPDATE idempotency_keys SET state = 'claimed', claimed_at = now() - interval '5 minutes', lease_until = now()
        WHERE partner_id = $1 AND key = 'started'`,
      [partnerId],
    );
    await denyWallet(stack.db, { wallet, by: 'test', reason: 'listed after the payout started' });
    const resumed = await withKey(apiKey, 'started', { ...VALID_PAYOUT, receiver_wallet: wallet });
    expect(resumed.status).toBe(201);
    expect(idOf(resumed)).toBe(idOf(first));
    expect(await keyRow(partnerId, 'started')).toEqual({ payout_id: idOf(first), state: 'recorded' });
    expect(await countPayouts(stack.db, partnerId)).toBe(1);
  });

  it('a claim without a lease (made before D73, or by an api of the previous version) is stale 60 s after claimed_at', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const unleased = async (key: string, age: string) => {
      const id = randomUUID();
      await stack.db.query(
        `INSERT INTO idempotency_keys (partner_id, key, payout_id, workflow_id, state, claimed_at, expires_at)
         VALUES ($1, $2, $3, $4, 'claimed', now() - $5::interval, now() + interval '24 hours')`,
        [partnerId, key, id, `payout-${partnerId}-idem-${key}-${id.slice(0, 8)}`, age],
      );
      return id;
    };
    await unleased('old-young', '50 seconds');
    expectError(await withKey(apiKey, 'old-young'), 409, 'idempotency conflict');
    const oldId = await unleased('old-stale', '61 seconds');
    const res = await withKey(apiKey, 'old-stale');
    expect(res.status).toBe(201);
    expect(idOf(res)).toBe(oldId);
    expect(await keyRow(partnerId, 'old-stale')).toEqual({ payout_id: oldId, state: 'recorded' });
  });

  it('after 24 hours the key creates a new payout', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const first = await withKey(apiKey, 'daily');
    await stack.db.query(
      `UPDATE idempotency_keys SET claimed_at = claimed_at - interval '24 hours 1 second',
              expires_at = expires_at - interval '24 hours 1 second'
        WHERE partner_id = $1 AND key = 'daily'`,
      [partnerId],
    );
    const second = await withKey(apiKey, 'daily');
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect(idOf(second)).not.toBe(idOf(first));
    expect(await countPayouts(stack.db, partnerId)).toBe(2);
    // The key now replays the new payout for the next 24 hours.
    expect(idOf(await withKey(apiKey, 'daily'))).toBe(idOf(second));
  });

  it('just inside 24 hours the key still replays', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const first = await withKey(apiKey, 'daily');
    await stack.db.query(
      `UPDATE idempotency_keys SET claimed_at = claimed_at - interval '23 hours 59 minutes',
              expires_at = expires_at - interval '23 hours 59 minutes'
        WHERE partner_id = $1 AND key = 'daily'`,
      [partnerId],
    );
    const replay = await withKey(apiKey, 'daily');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(idOf(replay)).toBe(idOf(first));
  });

  it('a payout whose PIX charge the provider refused frees its key: a retry makes a new attempt', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    // A stale claim whose payout id the provider already holds with other terms: the provider
    // refuses the charge (409, not retryable), so the payout fails before the partner ever sees it.
    const doomedId = randomUUID();
    const charge = await fetch(`${stack.sandboxUrl}/pix/charges`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        external_id: doomedId,
        amount_brl: '1.00',
        payer_pix_key: '12345678901',
        payer_pix_key_type: 'CPF',
        expires_in_seconds: 60,
      }),
    });
    expect(charge.status).toBe(201);
    await stack.db.query(
      `INSERT INTO idempotency_keys (partner_id, key, payout_id, workflow_id, state, claimed_at, expires_at,
                                     claim_token, lease_until)
       VALUES ($1, 'retry-me', $2, $3, 'claimed', now() - interval '5 seconds', now() + interval '24 hours',
               $4, now() - interval '1 second')`,
      [partnerId, doomedId, `payout-${partnerId}-idem-retry-${doomedId.slice(0, 8)}`, randomUUID()],
    );

    const failed = await withKey(apiKey, 'retry-me');
    expectError(failed, 502, 'payment provider could not create the PIX charge, retry later');
    expect(await keyRow(partnerId, 'retry-me')).toBeUndefined();

    const retried = await withKey(apiKey, 'retry-me');
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(idOf(retried)).not.toBe(doomedId);
    expect(idOf(await withKey(apiKey, 'retry-me'))).toBe(idOf(retried));
  });
  // The claim is a lease its request renews, fenced by a token (docs/decisions.md D73). A request is
  // held where the test wants it by its quote, and "overtaken" by holding back its renewals (as a
  // GC pause or a slow database would) until its lease has run out on the database's clock.
  describe('the claim is a lease with a fencing token (D73)', () => {
    interface Gate {
      promise: Promise<void>;
      open(): void;
      fail(err: Error): void;
    }
    function gate(): Gate {
      let open!: () => void;
      let fail!: (err: Error) => void;
      const promise = new Promise<void>((resolve, reject) => {
        open = resolve;
        fail = reject;
      });
      promise.catch(() => {});
      return { promise, open, fail };
    }

    /** An api of its own whose quotes wait for `quote`, on a pool whose lease renewals can be held back. */
    async function heldApi(quoteSource?: () => Promise<{ rate: string; expiresAt: string }>) {
      const pool: Db = createPool(stack.config.DATABASE_URL, 3);
      const query = pool.query.bind(pool) as (text: string, params?: unknown[]) => Promise<unknown>;
      let renewals: Gate | undefined;
      let renewalDelayMs = 0;
      pool.query = ((text: string, params?: unknown[]) => {
        const held = renewals;
        if (typeof text === 'string' && text.includes('SET lease_until = now() + ')) {
          if (held) return held.promise.then(() => query(text, params));
          if (renewalDelayMs > 0)
            return new Promise((r) => setTimeout(r, renewalDelayMs)).then(() => query(text, params));
        }
        return query(text, params);
      }) as unknown as Db['query'];
      const quote = gate();
      const api = await stack.startApi(
        {},
        {
          db: pool,
          quote: quoteSource ?? (() => quote.promise.then(() => FIXED_QUOTE())),
          // Its own screening, so that its verdicts are in no other api's cache.
          screening: configuredScreening(stack.config, pool),
        },
      );
      return {
        url: api.url,
        quote,
        holdRenewals: () => (renewals = gate()),
        /** Each renewal reaches the database `ms` after it was sent (a slow database, an exhausted pool). */
        slowRenewals: (ms: number) => (renewalDelayMs = ms),
        releaseRenewals: () => {
          renewals?.open();
          renewals = undefined;
        },
        close: async () => {
          renewals?.open();
          quote.open();
          await api.close();
          await pool.end();
        },
      };
    }

    async function claimRow(partnerId: string, key: string) {
      const { rows } = await stack.db.query<{
        payout_id: string;
        state: string;
        claim_token: string;
        lapsed: boolean;
        age_ms: number;
      }>(
        `SELECT payout_id, state, claim_token, lease_until <= now() AS lapsed,
                extract(epoch FROM now() - claimed_at) * 1000 AS age_ms
           FROM idempotency_keys WHERE partner_id = $1 AND key = $2`,
        [partnerId, key],
      );
      return rows[0];
    }

    const until_ = (what: string, probe: () => Promise<boolean>) =>
      until(what, async () => ((await probe()) ? true : undefined), { timeoutMs: 20_000 });

    async function onePayout(partnerId: string, payoutId: string) {
      expect(await keyRow(partnerId, 'k')).toEqual({ payout_id: payoutId, state: 'recorded' });
      expect(await countPayouts(stack.db, partnerId)).toBe(1);
      expect(stack.providerProxy!.chargesCreated().get(payoutId)).toBe(1);
      // Visibility is written after the start: wait until the list shows the payout's workflow at all.
      const listed = async () => {
        const workflows: string[] = [];
        for await (const wf of stack.temporal.workflow.list({
          query: `WorkflowType = "payoutWorkflow" AND PartnerId = "${partnerId}"`,
        }))
          workflows.push(wf.workflowId);
        return workflows;
      };
      const workflows = await until('the payout workflow in visibility', async () => {
        const found = await listed();
        return found.length > 0 ? found : undefined;
      });
      expect(workflows).toHaveLength(1);
    }

    it('a request in flight longer than the lease keeps renewing it: a duplicate still answers 409', async () => {
      const { partnerId, apiKey } = await stack.createPartner();
      const a = await heldApi();
      try {
        const first = post(a.url, apiKey, VALID_PAYOUT, { 'idempotency-key': 'k' });
        // Claimed longer ago than the lease and a renewal period: only its renewals keep it.
        await until_('the claim to outlive its first lease', async () => {
          const r = await claimRow(partnerId, 'k');
          return r !== undefined && r.age_ms > CLAIM_LEASE_SECONDS * 1000 + CLAIM_RENEW_MS;
        });
        expect((await claimRow(partnerId, 'k'))?.lapsed).toBe(false);
        expectError(await withKey(apiKey, 'k'), 409, 'idempotency conflict');
        a.quote.open();
        const res = await first;
        expect(res.status).toBe(201);
        await onePayout(partnerId, idOf(res));
      } finally {
        await a.close();
      }
    });

    it("an overtaken request never starts the payout: it answers what the key says now, the takeover's payout", async () => {
      const { partnerId, apiKey } = await stack.createPartner();
      const a = await heldApi();
      try {
        a.holdRenewals();
        const first = post(a.url, apiKey, VALID_PAYOUT, { 'idempotency-key': 'k' });
        await until_(
          "the held request's lease to run out",
          async () => (await claimRow(partnerId, 'k'))?.lapsed === true,
        );
        const claimedId = (await claimRow(partnerId, 'k'))!.payout_id;
        // B, the partner's retry, takes the claim over: same payout id, same workflow id.
        const b = await withKey(apiKey, 'k');
        expect(b.status).toBe(201);
        expect(idOf(b)).toBe(claimedId);
        // A wakes up: before starting the payout it finds the claim is no longer its own, and reads
        // the key again: B has recorded its payout, which A answers as a replay.
        a.quote.open();
        a.releaseRenewals();
        const res = await first;
        expect(res.status).toBe(201);
        expect(res.headers.get('idempotent-replayed')).toBe('true');
        expect(res.json).toEqual(b.json);
        await onePayout(partnerId, claimedId);
      } finally {
        await a.close();
      }
    });

    it('an overtaken request that fails never frees the key its successor holds (no second payout)', async () => {
      const { partnerId, apiKey } = await stack.createPartner();
      const a = await heldApi();
      const b = await heldApi();
      try {
        a.holdRenewals();
        const first = post(a.url, apiKey, VALID_PAYOUT, { 'idempotency-key': 'k' });
        await until_(
          "the held request's lease to run out",
          async () => (await claimRow(partnerId, 'k'))?.lapsed === true,
        );
        const { payout_id: claimedId, claim_token: tokenA } = (await claimRow(partnerId, 'k'))!;
        const second = post(b.url, apiKey, VALID_PAYOUT, { 'idempotency-key': 'k' });
        await until_(
          'B to take the claim over',
          async () => (await claimRow(partnerId, 'k'))?.claim_token !== tokenA,
        );
        // A's quote fails while B is in flight: A's release of the key must change nothing.
        a.releaseRenewals();
        a.quote.fail(new Error('provider down'));
        expectError(await first, 503, 'quote unavailable, retry later');
        expect(await claimRow(partnerId, 'k')).toMatchObject({
          state: 'claimed',
          payout_id: claimedId,
          lapsed: false,
        });
        expectError(await withKey(apiKey, 'k'), 409, 'idempotency conflict');
        b.quote.open();
        const res = await second;
        expect(res.status).toBe(201);
        expect(idOf(res)).toBe(claimedId);
        await onePayout(partnerId, claimedId);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('a takeover that creates nothing keeps the key (its predecessor may still start the payout) but hands it on at once', async () => {
      const { partnerId, apiKey } = await stack.createPartner();
      const a = await heldApi();
      const failing = await heldApi(() => Promise.reject(new Error('provider down')));
      try {
        a.holdRenewals();
        const first = post(a.url, apiKey, VALID_PAYOUT, { 'idempotency-key': 'k' });
        await until_(
          "the held request's lease to run out",
          async () => (await claimRow(partnerId, 'k'))?.lapsed === true,
        );
        const claimedId = (await claimRow(partnerId, 'k'))!.payout_id;
        // B takes over, finds no payout started, and cannot quote: 503, and the key is not freed.
        expectError(
          await post(failing.url, apiKey, VALID_PAYOUT, { 'idempotency-key': 'k' }),
          503,
          'quote unavailable, retry later',
        );
        expect(await claimRow(partnerId, 'k')).toMatchObject({
          state: 'claimed',
          payout_id: claimedId,
          lapsed: true,
        });
        // C, the next retry, takes it over at once (no 409) and makes the payout under the same id.
        const c = await withKey(apiKey, 'k');
        expect(c.status).toBe(201);
        expect(idOf(c)).toBe(claimedId);
        a.quote.open();
        a.releaseRenewals();
        const res = await first;
        expect(res.status).toBe(201);
        expect(res.headers.get('idempotent-replayed')).toBe('true');
        expect(idOf(res)).toBe(claimedId);
        await onePayout(partnerId, claimedId);
      } finally {
        await Promise.all([a.close(), failing.close()]);
      }
    });

    it('an overtaken request whose takeover is still in flight answers 409; the takeover makes the payout', async () => {
      const { partnerId, apiKey } = await stack.createPartner();
      const a = await heldApi();
      const b = await heldApi();
      try {
        a.holdRenewals();
        const first = post(a.url, apiKey, VALID_PAYOUT, { 'idempotency-key': 'k' });
        await until_(
          "the held request's lease to run out",
          async () => (await claimRow(partnerId, 'k'))?.lapsed === true,
        );
        const { payout_id: claimedId, claim_token: tokenA } = (await claimRow(partnerId, 'k'))!;
        const second = post(b.url, apiKey, VALID_PAYOUT, { 'idempotency-key': 'k' });
        await until_(
          'B to take the claim over',
          async () => (await claimRow(partnerId, 'k'))?.claim_token !== tokenA,
        );
        // A wakes up while B, held at its quote, renews the claim: the key is in flight.
        a.quote.open();
        a.releaseRenewals();
        expectError(await first, 409, 'idempotency conflict');
        b.quote.open();
        const res = await second;
        expect(res.status).toBe(201);
        expect(idOf(res)).toBe(claimedId);
        await onePayout(partnerId, claimedId);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('an overtaken request whose takeover was refused by screening answers that refusal, not 409', async () => {
      const { partnerId, apiKey } = await stack.createPartner();
      const wallet = privateKeyToAddress(generatePrivateKey());
      const body = { ...VALID_PAYOUT, receiver_wallet: wallet };
      const a = await heldApi();
      try {
        a.holdRenewals();
        // A has passed screening and waits for its quote when its lease runs out.
        const first = post(a.url, apiKey, body, { 'idempotency-key': 'k' });
        await until_(
          "the held request's lease to run out",
          async () => (await claimRow(partnerId, 'k'))?.lapsed === true,
        );
        await denyWallet(stack.db, { wallet, by: 'test', reason: 'listed while A was held' });
        const refused = await withKey(apiKey, 'k', body);
        expectError(refused, 422, 'receiver_wallet failed compliance screening');
        a.quote.open();
        a.releaseRenewals();
        expectError(await first, 422, 'receiver_wallet failed compliance screening');
        expect(await keyRow(partnerId, 'k')).toMatchObject({ state: 'refused' });
        expect(await countPayouts(stack.db, partnerId)).toBe(0);
      } finally {
        await a.close();
      }
    });

    it('an overtaken request whose takeover created nothing and ended its lease takes the claim back and makes the payout', async () => {
      const { partnerId, apiKey } = await stack.createPartner();
      const a = await heldApi();
      const failing = await heldApi(() => Promise.reject(new Error('provider down')));
      try {
        a.holdRenewals();
        const first = post(a.url, apiKey, VALID_PAYOUT, { 'idempotency-key': 'k' });
        await until_(
          "the held request's lease to run out",
          async () => (await claimRow(partnerId, 'k'))?.lapsed === true,
        );
        const claimedId = (await claimRow(partnerId, 'k'))!.payout_id;
        expectError(
          await post(failing.url, apiKey, VALID_PAYOUT, { 'idempotency-key': 'k' }),
          503,
          'quote unavailable, retry later',
        );
        // Nobody holds the key now: A, finding its claim lost, claims it again as a retry would.
        a.quote.open();
        a.releaseRenewals();
        const res = await first;
        expect(res.status).toBe(201);
        expect(res.headers.get('idempotent-replayed')).toBeNull();
        expect(idOf(res)).toBe(claimedId);
        await onePayout(partnerId, claimedId);
      } finally {
        await Promise.all([a.close(), failing.close()]);
      }
    });

    it("renewals too slow to confirm the claim before the start: 503 'service busy, retry later', nothing started, the retry continues at once", async () => {
      const { partnerId, apiKey } = await stack.createPartner();
      const a = await heldApi();
      try {
        // Each renewal takes longer than the 1 s the lease must have left at the start.
        a.slowRenewals(1_100);
        const first = post(a.url, apiKey, VALID_PAYOUT, { 'idempotency-key': 'k' });
        await until_('the claim to be older than the start margin', async () => {
          const r = await claimRow(partnerId, 'k');
          return r !== undefined && r.age_ms > 1_200;
        });
        const claimedId = (await claimRow(partnerId, 'k'))!.payout_id;
        a.quote.open();
        const res = await first;
        expectError(res, 503, 'service busy, retry later');
        expect(res.headers.get('retry-after')).toBe(String(CLAIM_LEASE_SECONDS));
        expect(await countPayouts(stack.db, partnerId)).toBe(0);
        // Its lease was ended: the retry takes the claim over at once and makes the payout.
        expect(await claimRow(partnerId, 'k')).toMatchObject({ state: 'claimed', lapsed: true });
        const retried = await withKey(apiKey, 'k');
        expect(retried.status).toBe(201);
        expect(idOf(retried)).toBe(claimedId);
        await onePayout(partnerId, claimedId);
      } finally {
        await a.close();
      }
    });
  });
});
