import jsQR from 'jsqr';
import { PNG } from 'pngjs';
import { freePort } from '../../dev/local/infra/ports';
import { useStack, VALID_PAYOUT } from '../support/stack';
import { call, expectError, getPayout, post, readResponse } from './helpers';

// GET /v1/quotes (a preview computed by POST's own code) and GET /v1/payouts/{id}/qr.svg|.png (the
// payout's PIX charge as a scannable image), on the real stack.

type Payout = { id: string; status: string; min_amount_usdt: number; pix_copy_paste: string };

describe('quote preview and QR code', () => {
  const stack = useStack();

  const auth = (apiKey: string | undefined): Record<string, string> =>
    apiKey === undefined ? {} : { 'x-api-key': apiKey };
  const quote = (apiKey: string | undefined, query: string, baseUrl = stack.apiUrl) =>
    call(baseUrl, `/v1/quotes${query}`, { headers: auth(apiKey) });

  describe('GET /v1/quotes', () => {
    it.each([['100'], ['1'], ['99.99'], ['1e2'], ['12345.6'], ['100000']])(
      'amount_brl=%s previews exactly the min_amount_usdt that POST fixes',
      async (amount) => {
        const { apiKey } = await stack.createPartner();
        const preview = await quote(apiKey, `?amount_brl=${amount}`);
        expect(preview.status).toBe(200);
        expect(preview.headers.get('content-type')).toMatch(/^application\/json/);
        const created = await post(
          stack.apiUrl,
          apiKey,
          `{"amount_brl": ${amount},
          "receiver_wallet": "${VALID_PAYOUT.receiver_wallet}", "pix_key": "12345678901", "pix_key_type": "CPF"}`,
        );
        expect(created.status).toBe(201);
        const payout = created.json as Payout & { amount_brl: number };
        expect(preview.json).toEqual({
          amount_brl: payout.amount_brl,
          min_amount_usdt: payout.min_amount_usdt,
          expires_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        });
      },
    );

    it('is what the formula gives at the sandbox rate, and expires within the 30 s rate cache', async () => {
      const { apiKey } = await stack.createPartner();
      const before = Date.now();
      const preview = await quote(apiKey, '?amount_brl=100');
      // 100 / (5.50 x 1.06), rounded down to 6 decimals.
      expect(preview.json).toMatchObject({ amount_brl: 100, min_amount_usdt: 17.152658 });
      const expiresAt = Date.parse((preview.json as { expires_at: string }).expires_at);
      expect(expiresAt).toBeLessThanOrEqual(before + 30_000 + 1_000);
      expect(expiresAt).toBeGreaterThan(before - 30_000);
    });

    // Each invalid amount sent both ways: the query text, and the same JSON literal in POST's body.
    it.each([
      ['0', '0'],
      ['-1', '-1'],
      ['1.001', '1.001'],
      ['100000.01', '100000.01'],
      ['1e400', '1e400'],
      ['-1e400', '-1e400'],
      ['0.30000000000000004', '0.30000000000000004'],
      ['0.01', '0.01'],
      ['abc', '"abc"'],
      ['', '""'],
    ])('amount_brl=%s is refused with the status and message of POST', async (query, literal) => {
      const { apiKey } = await stack.createPartner();
      const created = await post(
        stack.apiUrl,
        apiKey,
        `{"amount_brl": ${literal},
        "receiver_wallet": "${VALID_PAYOUT.receiver_wallet}", "pix_key": "12345678901", "pix_key_type": "CPF"}`,
      );
      expect(created.status).toBe(400);
      const preview = await quote(apiKey, `?amount_brl=${encodeURIComponent(query)}`);
      expectError(preview, 400, (created.json as { error: string }).error);
    });

    it('missing, repeated or unknown parameters are 400 naming them', async () => {
      const { apiKey } = await stack.createPartner();
      expectError(await quote(apiKey, ''), 400, 'amount_brl is required');
      expectError(await quote(apiKey, '?amount_brl=1&amount_brl=2'), 400, 'amount_brl must be given once');
      expectError(
        await quote(apiKey, '?amount_brl=1&currency=USD'),
        400,
        'unknown query parameter currency; accepted: amount_brl',
      );
    });

    it('needs an API key', async () => {
      expectError(await quote(undefined, '?amount_brl=100'), 401, 'missing X-API-Key header');
      expectError(await quote('nope', '?amount_brl=100'), 401, 'invalid API key');
    });

    it('answers 503 as POST does when the provider has no rate', async () => {
      const { url } = await stack.startApi({}, { providerUrl: `http://127.0.0.1:${await freePort()}` });
      const { apiKey } = await stack.createPartner();
      const previewed = await quote(apiKey, '?amount_brl=100', url);
      expectError(previewed, 503, 'quote unavailable, retry later');
      expect(previewed.headers.get('retry-after')).toBe('5');
      const posted = await post(url, apiKey, VALID_PAYOUT);
      expectError(posted, 503, 'quote unavailable, retry later');
      expect(posted.headers.get('retry-after')).toBe('5');
    });
  });

  describe('GET /v1/payouts/{id}/qr.svg and qr.png', () => {
    const qr = (
      apiKey: string | undefined,
      id: string,
      format: string,
      headers: Record<string, string> = {},
    ) => fetch(`${stack.apiUrl}/v1/payouts/${id}/qr.${format}`, { headers: { ...auth(apiKey), ...headers } });

    async function create(apiKey: string): Promise<Payout> {
      const res = await post(stack.apiUrl, apiKey, VALID_PAYOUT);
      expect(res.status).toBe(201);
      return res.json as Payout;
    }

    it('the PNG scans back to the payout’s pix_copy_paste', async () => {
      const { apiKey } = await stack.createPartner();
      const payout = await create(apiKey);
      const res = await qr(apiKey, payout.id, 'png');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('image/png');
      const png = PNG.sync.read(Buffer.from(await res.arrayBuffer()));
      const decoded = jsQR(new Uint8ClampedArray(png.data), png.width, png.height);
      expect(decoded?.data).toBe(payout.pix_copy_paste);
    });

    it('the SVG scans back to the payout’s pix_copy_paste', async () => {
      const { apiKey } = await stack.createPartner();
      const payout = await create(apiKey);
      const res = await qr(apiKey, payout.id, 'svg');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
      expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
      const image = rasterizeQrSvg(await res.text());
      expect(jsQR(image.data, image.width, image.height)?.data).toBe(payout.pix_copy_paste);
    });

    it('carries private caching headers and answers 304 to its ETag while PENDING', async () => {
      const { apiKey } = await stack.createPartner();
      const payout = await create(apiKey);
      const svg = await qr(apiKey, payout.id, 'svg');
      await svg.arrayBuffer();
      const png = await qr(apiKey, payout.id, 'png');
      await png.arrayBuffer();
      const etag = svg.headers.get('etag')!;
      expect(etag).toMatch(/^"[^"]+"$/);
      expect(png.headers.get('etag')).not.toBe(etag);
      for (const res of [svg, png]) {
        expect(res.headers.get('cache-control')).toBe('private, no-cache');
        expect(res.headers.get('vary')).toMatch(/x-api-key/i);
      }
      const again = await qr(apiKey, payout.id, 'svg', { 'if-none-match': etag });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe('');
      expect(again.headers.get('etag')).toBe(etag);
      const other = await qr(apiKey, payout.id, 'svg', { 'if-none-match': '"something-else"' });
      expect(other.status).toBe(200);
      await other.arrayBuffer();
    });

    it("is 404 as GET for another partner's payout, an unknown id or a malformed one", async () => {
      const owner = await stack.createPartner();
      const stranger = await stack.createPartner();
      const payout = await create(owner.apiKey);
      expect((await getPayout(stack.apiUrl, stranger.apiKey, payout.id)).status).toBe(404);
      for (const id of [payout.id, '9b2c7a0e-0000-4000-8000-000000000000', 'not-an-id']) {
        for (const format of ['svg', 'png']) {
          expectError(await readResponse(await qr(stranger.apiKey, id, format)), 404, 'payout not found');
        }
      }
      expectError(await readResponse(await qr(undefined, payout.id, 'svg')), 401, 'missing X-API-Key header');
    });

    it('is 410 once the payout is paid (COMPLETED), even for a cached copy', async () => {
      const { apiKey } = await stack.createPartner();
      const payout = await create(apiKey);
      const before = await qr(apiKey, payout.id, 'svg');
      await before.arrayBuffer();
      await stack.pay(payout.pix_copy_paste);
      await stack.waitForStatus(apiKey, payout.id, ['COMPLETED']);
      for (const format of ['svg', 'png']) {
        expectError(
          await readResponse(await qr(apiKey, payout.id, format)),
          410,
          'payout is COMPLETED: its PIX charge can no longer be paid',
        );
      }
      const revalidated = await qr(apiKey, payout.id, 'svg', {
        'if-none-match': before.headers.get('etag')!,
      });
      expectError(await readResponse(revalidated), 410);
    });
  });

  describe('rate limit', () => {
    it('quote and QR spend the read bucket of GET /v1/payouts/{id}', async () => {
      const { url } = await stack.startApi({ READ_RATE_LIMIT_PER_MINUTE: 3 });
      const { apiKey } = await stack.createPartner();
      const created = await post(url, apiKey, VALID_PAYOUT);
      expect(created.status).toBe(201);
      const id = (created.json as Payout).id;
      expect((await quote(apiKey, '?amount_brl=100', url)).status).toBe(200);
      const svg = await fetch(`${url}/v1/payouts/${id}/qr.svg`, { headers: auth(apiKey) });
      await svg.arrayBuffer();
      expect(svg.status).toBe(200);
      expect((await quote(apiKey, '?amount_brl=0', url)).status).toBe(400);
      expectError(await getPayout(url, apiKey, id), 429, 'rate limit exceeded, retry after 60 seconds');
      expectError(await quote(apiKey, '?amount_brl=100', url), 429);
    });
  });
});

/**
 * The SVG of the `qrcode` package draws dark modules as one stroked path of `M x y`, `m dx dy` and
 * `h n` commands on a one-unit grid (viewBox 0 0 N N). This paints that path into an RGBA image,
 * 4 pixels per module, for the QR decoder: the test reads what the SVG shows, not how it was made.
 */
function rasterizeQrSvg(svg: string): { data: Uint8ClampedArray; width: number; height: number } {
  const size = Number(/viewBox="0 0 (\d+) \d+"/.exec(svg)?.[1]);
  const path = /<path stroke="#000000" d="([^"]+)"/.exec(svg)?.[1];
  if (!size || !path) throw new Error(`not a qrcode SVG: ${svg.slice(0, 200)}`);
  const dark = Array.from({ length: size }, () => new Array<boolean>(size).fill(false));
  let x = 0;
  let y = 0;
  for (const [, command, args] of path.matchAll(/([MmHh])([^MmHh]+)/g)) {
    const numbers = args!
      .trim()
      .split(/[\s,]+/)
      .map(Number);
    if (command === 'M') [x, y] = [numbers[0]!, numbers[1]!];
    else if (command === 'm') [x, y] = [x + numbers[0]!, y + numbers[1]!];
    else if (command === 'h') {
      for (let i = 0; i < numbers[0]!; i += 1) dark[Math.floor(y)]![x + i] = true;
      x += numbers[0]!;
    } else throw new Error(`unexpected path command ${command}`);
  }
  const scale = 4;
  const width = size * scale;
  const data = new Uint8ClampedArray(width * width * 4);
  for (let py = 0; py < width; py += 1) {
    for (let px = 0; px < width; px += 1) {
      const value = dark[Math.floor(py / scale)]![Math.floor(px / scale)] ? 0 : 255;
      data.set([value, value, value, 255], (py * width + px) * 4);
    }
  }
  return { data, width, height: width };
}
