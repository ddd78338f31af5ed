import { pbkdf2 } from 'node:crypto';
import { createDnsResolver, HostNotFound } from '../../src/adapters/callbacks/dns-resolver';
import { CallbackUrlRefused, URL_REFUSALS, vetCallbackUrl } from '../../src/adapters/callbacks/url-guard';
import { startDnsServer, type DnsServer } from '../support/dns-server';

// The callback URL guard resolves hosts by DNS queries (c-ares, on the event loop), not by
// dns.lookup (getaddrinfo on libuv's 4 threadpool threads, which also hash API keys and seal
// secrets): docs/decisions.md D69. A real DNS server on loopback UDP answers, or does not.
describe('callback host resolution', () => {
  let dns: DnsServer;
  beforeAll(async () => {
    dns = await startDnsServer({
      records: {
        'hooks.partner.test': { a: ['93.184.215.14'], aaaa: ['2606:2800:21f:cb07:6820:80da:af6b:8b2c'] },
        'v4only.partner.test': { a: ['93.184.215.15'] },
        'mixed.partner.test': { a: ['93.184.215.14', '10.0.0.7'] },
        'internal.partner.test': { a: ['10.20.30.40'] },
        'nothing.partner.test': {},
        ...Object.fromEntries(
          [1, 2, 3, 4, 5, 6].map((n) => [`delayed${n}.partner.test`, { a: ['93.184.215.14'], delayMs: 150 }]),
        ),
      },
      hang: ['slow.partner.test'],
      servfail: ['broken.partner.test'],
    });
  });
  afterAll(() => dns?.close());

  const strict = { requireHttps: true, allowPrivateNetworks: false };
  const resolverOf = (opts: { timeoutMs?: number; concurrency?: number } = {}) =>
    createDnsResolver({
      timeoutMs: opts.timeoutMs ?? 1_000,
      tries: 1,
      concurrency: opts.concurrency ?? 4,
      servers: [dns.address],
    });
  const refusalOf = async (p: Promise<unknown>): Promise<CallbackUrlRefused> => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CallbackUrlRefused);
    return err as CallbackUrlRefused;
  };

  it('asks for A and AAAA and vets every address found', async () => {
    const resolve = resolverOf();
    await expect(resolve('hooks.partner.test')).resolves.toEqual([
      { address: '93.184.215.14', family: 4 },
      { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
    ]);
    // One family is enough: the other's "no data" is not a failure.
    await expect(resolve('v4only.partner.test')).resolves.toEqual([{ address: '93.184.215.15', family: 4 }]);
    const vetted = await vetCallbackUrl('https://hooks.partner.test/cb', strict, resolve);
    expect(vetted.addresses.map((a) => a.address)).toEqual([
      '93.184.215.14',
      '2606:2800:21f:cb07:6820:80da:af6b:8b2c',
    ]);
    expect(dns.questions).toEqual(
      expect.arrayContaining(['hooks.partner.test A', 'hooks.partner.test AAAA']),
    );
  });

  it('keeps the private-network rules: any private address refuses the name, with a text naming none', async () => {
    const resolve = resolverOf();
    for (const host of ['mixed.partner.test', 'internal.partner.test']) {
      const refusal = await refusalOf(vetCallbackUrl(`https://${host}/cb`, strict, resolve));
      expect(refusal.message).toBe(URL_REFUSALS.notPublic);
      expect(refusal.detail).toMatch(new RegExp(`^host ${host} resolves to a private address, 10\\.`));
      expect(refusal.detail).toMatch(/CALLBACK_ALLOW_PRIVATE_NETWORKS/);
    }
  });

  it('a name without an address does not resolve; a failing server is "not now"', async () => {
    const resolve = resolverOf();
    await expect(resolve('unknown.partner.test')).rejects.toBeInstanceOf(HostNotFound);
    await expect(resolve('nothing.partner.test')).rejects.toBeInstanceOf(HostNotFound);
    // A name DNS cannot carry (a label over 63 bytes) never resolves either: not a failure to retry.
    await expect(resolve(`${'a'.repeat(64)}.partner.test`)).rejects.toBeInstanceOf(HostNotFound);
    const nx = await refusalOf(vetCallbackUrl('https://unknown.partner.test/cb', strict, resolve));
    expect({ message: nx.message, unresolvable: nx.unresolvable, temporary: nx.temporary }).toEqual({
      message: URL_REFUSALS.notFound,
      unresolvable: true,
      temporary: false,
    });
    expect(nx.detail).toMatch(/ENOTFOUND/);
    const failing = await refusalOf(vetCallbackUrl('https://broken.partner.test/cb', strict, resolve));
    expect({ message: failing.message, temporary: failing.temporary }).toEqual({
      message: URL_REFUSALS.unavailable,
      temporary: true,
    });
    expect(failing.detail).toMatch(/ESERVFAIL/);
  });

  it('a server that never answers is a temporary refusal at the deadline, not a hang', async () => {
    const resolve = resolverOf({ timeoutMs: 400 });
    const started = Date.now();
    const refusal = await refusalOf(vetCallbackUrl('https://slow.partner.test/cb', strict, resolve));
    const took = Date.now() - started;
    expect({ message: refusal.message, temporary: refusal.temporary }).toEqual({
      message: URL_REFUSALS.unavailable,
      temporary: true,
    });
    expect(took).toBeGreaterThanOrEqual(350);
    expect(took).toBeLessThan(3_000);
  });

  it('runs a bounded number of resolutions at once; the others wait for their turn', async () => {
    const resolve = resolverOf({ timeoutMs: 5_000, concurrency: 2 });
    dns.maxPending = 0;
    const started = Date.now();
    const answers = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => resolve(`delayed${n}.partner.test`)));
    expect(answers.every((a) => a[0]?.address === '93.184.215.14')).toBe(true);
    // Two resolutions at a time, each an A and an AAAA query on the wire: three rounds of 150 ms.
    expect(dns.maxPending).toBe(4);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3 * 150 - 20);
  });

  it('answers while every threadpool thread is busy (dns.lookup would wait for one)', async () => {
    const resolve = resolverOf({ timeoutMs: 5_000 });
    const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
    let firstHashDone: number | undefined;
    // Each hash holds a threadpool thread for a second or more on this machine.
    const hashes = Array.from(
      { length: threads },
      () =>
        new Promise<void>((done, fail) =>
          pbkdf2('callback', 'salt', 2_000_000, 64, 'sha512', (err) => {
            firstHashDone ??= Date.now();
            if (err) fail(err);
            else done();
          }),
        ),
    );
    const started = Date.now();
    const vetted = await vetCallbackUrl('https://v4only.partner.test/cb', strict, resolve);
    const resolvedAt = Date.now();
    await Promise.all(hashes);
    expect(vetted.addresses).toEqual([{ address: '93.184.215.15', family: 4 }]);
    expect({ resolvedBeforeAnyHash: resolvedAt < firstHashDone!, took: resolvedAt - started }).toEqual({
      resolvedBeforeAnyHash: true,
      took: expect.any(Number),
    });
  }, 60_000);

  it('answers localhost as loopback without asking DNS (RFC 6761)', async () => {
    const resolve = resolverOf();
    const asked = dns.questions.length;
    await expect(resolve('localhost')).resolves.toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
    await expect(resolve('api.LOCALHOST.')).resolves.toHaveLength(2);
    expect(dns.questions.length).toBe(asked);
    const refusal = await refusalOf(vetCallbackUrl('https://localhost/cb', strict, resolve));
    expect(refusal.message).toBe(URL_REFUSALS.notPublic);
  });
});
