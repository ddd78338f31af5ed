import { useStack, VALID_PAYOUT } from '../support/stack';
import { call, expectError, getPayout, PAYOUT_KEYS, post, type ApiResponse } from './helpers';

// GET /v1/payouts: a partner's payouts newest first, keyset-paginated from the read model. Volume is
// seeded straight into the read model (as the workflows would have written it); the rest goes
// through the api.

type Payout = Record<string, unknown> & { id: string; status: string; created_at: string };
interface Page {
  data: Payout[];
  has_more: boolean;
}

describe('GET /v1/payouts', () => {
  const stack = useStack();

  const list = (apiKey: string | undefined, query = '', baseUrl = stack.apiUrl): Promise<ApiResponse> =>
    call(baseUrl, `/v1/payouts${query}`, { headers: apiKey === undefined ? {} : { 'x-api-key': apiKey } });

  async function listPage(apiKey: string, query: string): Promise<Page> {
    const res = await list(apiKey, query);
    expect({ status: res.status, body: res.status === 200 ? 'page' : res.json }).toEqual({
      status: 200,
      body: 'page',
    });
    return res.json as Page;
  }

  /** Every page from the first, following starting_after until has_more is false. */
  async function pageThrough(
    apiKey: string,
    filters: string,
    limit: number,
    startingAfter?: string,
  ): Promise<Payout[][]> {
    const pages: Payout[][] = [];
    let after = startingAfter;
    for (;;) {
      const cursor = after ? `&starting_after=${after}` : '';
      const page = await listPage(apiKey, `?limit=${limit}${filters}${cursor}`);
      pages.push(page.data);
      if (!page.has_more) return pages;
      expect(page.data).toHaveLength(limit);
      after = page.data.at(-1)!.id;
    }
  }

  /**
   * `count` read-model rows for a partner, created at the given instants in turn (so many share one
   * created_at), statuses in rotation. Returns their ids. The stack removes them when it closes.
   */
  const seed = (partnerId: string, count: number, instants: string[]): Promise<string[]> =>
    stack.seedPayouts(partnerId, { count, instants });

  /** The list order: created_at descending, then id descending (as PostgreSQL orders uuids). */
  function expectNewestFirst(items: Payout[]): void {
    for (let i = 1; i < items.length; i += 1) {
      const [a, b] = [items[i - 1]!, items[i]!];
      const ordered = a.created_at > b.created_at || (a.created_at === b.created_at && a.id > b.id);
      if (!ordered)
        throw new Error(`out of order at ${i}: ${a.created_at} ${a.id} then ${b.created_at} ${b.id}`);
    }
  }

  it('pages through 2,000 payouts on 5 shared timestamps with concurrent inserts: each exactly once', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const instants = [0, 1, 2, 3, 4].map((i) => `2026-03-0${i + 1}T12:00:00.123456Z`);
    const seeded = await seed(partnerId, 2_000, instants);

    // While the client pages, payouts keep arriving: new ones (now) and ones tied with the seeded
    // timestamps (a late read-model write), with ids that land on both sides of any cursor.
    let paging = true;
    let inserted = 0;
    const inserter = (async () => {
      while (paging) {
        await seed(partnerId, 3, [new Date().toISOString(), instants[inserted % 5]!]);
        inserted += 3;
      }
    })();
    let pages: Payout[][];
    try {
      pages = await pageThrough(apiKey, '', 37);
    } finally {
      paging = false;
      await inserter;
    }
    expect(inserted).toBeGreaterThan(0);

    const seen = pages.flat();
    const ids = seen.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length); // no duplicates
    const seenIds = new Set(ids);
    expect(seeded.filter((id) => !seenIds.has(id))).toEqual([]); // no gaps
    expectNewestFirst(seen);
    for (const item of seen) expect(Object.keys(item).sort()).toEqual(PAYOUT_KEYS);
  });

  it('defaults to 20 per page; limit is 1-100; has_more is false on the last page', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    await seed(partnerId, 101, ['2026-04-01T00:00:00Z']);
    expect((await listPage(apiKey, '')).data).toHaveLength(20);
    const first = await listPage(apiKey, '?limit=100');
    expect(first).toMatchObject({ has_more: true });
    expect(first.data).toHaveLength(100);
    const last = await listPage(apiKey, `?limit=100&starting_after=${first.data.at(-1)!.id}`);
    expect(last.data).toHaveLength(1);
    expect(last.has_more).toBe(false);
    expect(await listPage(apiKey, `?limit=1&starting_after=${last.data[0]!.id}`)).toEqual({
      data: [],
      has_more: false,
    });
  });

  it('each item is exactly what GET /v1/payouts/{id} answers', async () => {
    const { apiKey } = await stack.createPartner();
    const created: Payout[] = [];
    for (let i = 0; i < 3; i += 1) {
      const res = await post(stack.apiUrl, apiKey, { ...VALID_PAYOUT, amount_brl: 10 + i });
      expect(res.status).toBe(201);
      created.push(res.json as Payout);
    }
    const page = await listPage(apiKey, '');
    expect(page.data.map((p) => p.id)).toEqual(created.map((p) => p.id).reverse());
    for (const item of page.data) {
      const read = await getPayout(stack.apiUrl, apiKey, item.id);
      expect(item).toEqual(read.json);
    }
  });

  it('filters by status and by a half-open created_at interval, and pages within the filter', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    const instants = ['2026-05-01T00:00:00Z', '2026-05-02T00:00:00Z', '2026-05-03T00:00:00Z'];
    await seed(partnerId, 120, instants); // 40 per instant, 30 per status

    const completed = (await pageThrough(apiKey, '&status=COMPLETED', 7)).flat();
    expect(completed).toHaveLength(30);
    expect(new Set(completed.map((p) => p.status))).toEqual(new Set(['COMPLETED']));
    expectNewestFirst(completed);
    // Any case, as pix_key_type.
    expect((await listPage(apiKey, '?status=completed&limit=100')).data).toHaveLength(30);

    const window = (
      await pageThrough(
        apiKey,
        '&created_at[gte]=2026-05-02T00:00:00Z&created_at[lt]=2026-05-03T00:00:00Z',
        15,
      )
    ).flat();
    expect(window).toHaveLength(40);
    expect(new Set(window.map((p) => p.created_at))).toEqual(new Set(['2026-05-02T00:00:00.000Z']));
    // Offsets are instants: 2026-05-02T03:00:00+03:00 is 2026-05-02T00:00:00Z.
    const shifted = await listPage(
      apiKey,
      '?limit=100&created_at[gte]=2026-05-02T03:00:00%2B03:00&created_at[lt]=2026-05-03T03:00:00%2B03:00',
    );
    expect(shifted.data.map((p) => p.id).sort()).toEqual(window.map((p) => p.id).sort());
    // The same window in Unix seconds, and with the offset's `+` left unencoded (read as a space).
    const unix = await listPage(apiKey, '?limit=100&created_at[gte]=1777680000&created_at[lt]=1777766400');
    expect(unix.data.map((p) => p.id).sort()).toEqual(window.map((p) => p.id).sort());
    const unencoded = await listPage(
      apiKey,
      '?limit=100&created_at[gte]=2026-05-02T03:00:00+03:00&created_at[lt]=2026-05-03T03:00:00+03:00',
    );
    expect(unencoded.data.map((p) => p.id).sort()).toEqual(window.map((p) => p.id).sort());

    const both = await listPage(apiKey, '?limit=100&status=FAILED&created_at[gte]=2026-05-03T00:00:00Z');
    expect(both.data.length).toBeGreaterThan(0);
    for (const p of both.data)
      expect(p).toMatchObject({ status: 'FAILED', created_at: '2026-05-03T00:00:00.000Z' });
  });

  it('a cursor payout that changed status since the last page still marks its place', async () => {
    const { partnerId, apiKey } = await stack.createPartner();
    await seed(partnerId, 40, ['2026-06-01T00:00:00Z']);
    const first = await listPage(apiKey, '?status=PENDING&limit=4');
    const cursor = first.data.at(-1)!;
    await stack.db.query(`UPDATE payouts SET status = 'FAILED', version = version + 1 WHERE id = $1`, [
      cursor.id,
    ]);
    const rest = (await pageThrough(apiKey, '&status=PENDING', 4, cursor.id)).flat();
    expect([...first.data, ...rest].map((p) => p.id)).toHaveLength(10);
    expect(new Set([...first.data, ...rest].map((p) => p.id)).size).toBe(10);
  });

  it("lists only the caller's payouts; another partner's id is no cursor", async () => {
    const a = await stack.createPartner();
    const b = await stack.createPartner();
    const aIds = await seed(a.partnerId, 5, ['2026-07-01T00:00:00Z']);
    const bIds = await seed(b.partnerId, 3, ['2026-07-01T00:00:00Z']);
    const pageA = await listPage(a.apiKey, '?limit=100');
    const pageB = await listPage(b.apiKey, '?limit=100');
    expect(pageA.data.map((p) => p.id).sort()).toEqual(aIds.sort());
    expect(pageB.data.map((p) => p.id).sort()).toEqual(bIds.sort());
    for (const p of pageA.data) expect(p.partner_id).toBe(a.partnerId);

    expectError(
      await list(b.apiKey, `?starting_after=${aIds[0]}`),
      400,
      'starting_after must be the id of one of your payouts',
    );
    const fresh = await stack.createPartner();
    expect(await listPage(fresh.apiKey, '')).toEqual({ data: [], has_more: false });
  });

  it.each([
    ['?limit=0', 'limit must be an integer from 1 to 100'],
    ['?limit=101', 'limit must be an integer from 1 to 100'],
    ['?limit=ten', 'limit must be an integer from 1 to 100'],
    ['?limit=1.5', 'limit must be an integer from 1 to 100'],
    ['?limit=-1', 'limit must be an integer from 1 to 100'],
    ['?limit=007', 'limit must be an integer from 1 to 100'],
    ['?limit=', 'limit must be an integer from 1 to 100'],
    ['?limit=5&limit=6', 'limit must be given once'],
    ['?status=DONE', 'status must be one of PENDING, PROCESSING, COMPLETED, FAILED'],
    [
      '?created_at[gte]=2026-01-01',
      'created_at[gte] must be an ISO 8601 date-time with a time zone (e.g. 2026-01-31T00:00:00Z) or Unix seconds',
    ],
    [
      '?created_at[lt]=2026-02-30T00:00:00Z',
      'created_at[lt] must be an ISO 8601 date-time with a time zone (e.g. 2026-01-31T00:00:00Z) or Unix seconds',
    ],
    [
      '?created_at[lt]=2026-01-01T00:00:00',
      'created_at[lt] must be an ISO 8601 date-time with a time zone (e.g. 2026-01-31T00:00:00Z) or Unix seconds',
    ],
    ['?starting_after=42', 'starting_after must be the id of one of your payouts'],
    [
      '?starting_after=9b2c7a0e-0000-4000-8000-000000000000',
      'starting_after must be the id of one of your payouts',
    ],
    [
      '?created_at[lte]=2026-01-01T00:00:00Z',
      'unknown query parameter created_at[lte]; accepted: limit, starting_after, status, created_at[gte], created_at[lt]',
    ],
  ])('GET /v1/payouts%s is 400 naming the parameter', async (query, message) => {
    const { apiKey } = await stack.createPartner();
    expectError(await list(apiKey, query), 400, message);
  });

  it('needs an API key like every partner endpoint', async () => {
    expectError(await list(undefined), 401, 'missing X-API-Key header');
    expectError(await list('nope'), 401, 'invalid API key');
  });

  describe('rate limit', () => {
    const READ_LIMIT = 3;
    let url: string;

    beforeAll(async () => {
      ({ url } = await stack.startApi({ READ_RATE_LIMIT_PER_MINUTE: READ_LIMIT }));
    });

    it('spends the read bucket that GET /v1/payouts/{id} spends, 400s included', async () => {
      const { apiKey } = await stack.createPartner();
      const created = await post(url, apiKey, VALID_PAYOUT);
      expect(created.status).toBe(201);
      expect((await getPayout(url, apiKey, (created.json as Payout).id)).status).toBe(200);
      expect((await list(apiKey, '?limit=0', url)).status).toBe(400);
      expect((await list(apiKey, '', url)).status).toBe(200);
      const limited = await list(apiKey, '', url);
      expectError(limited, 429, 'rate limit exceeded, retry after 60 seconds');
      expect(limited.headers.get('retry-after')).toBe('60');
      expectError(await getPayout(url, apiKey, (created.json as Payout).id), 429);
      // POST keeps its own bucket.
      expect((await post(url, apiKey, VALID_PAYOUT)).status).toBe(201);
    });
  });
});
