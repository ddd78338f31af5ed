import { execFileSync } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { closeSync, constants, openSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createDnsResolver, HostNotFound } from '../../src/adapters/callbacks/dns-resolver';
import { CallbackUrlRefused, URL_REFUSALS, vetCallbackUrl } from '../../src/adapters/callbacks/url-guard';
import { startDnsServer, type DnsServer } from '../support/dns-server';
import { until } from '../support/until';

/**
 * Opens a FIFO's write end without a thread of the pool (they are all held): non-blocking, once its
 * reader is waiting in open(), which lets that reader go.
 */
async function openWriter(fifo: string): Promise<void> {
  const fd = await until(
    `a reader of ${fifo}`,
    () => {
      try {
        return openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
      } catch (err) {
        if ((err as { code?: string }).code === 'ENXIO') return undefined;
        throw err;
      }
    },
    { timeoutMs: 10_000, intervalMs: 10 },
  );
  closeSync(fd);
}

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
      hang: ['slow.partner.test', 'a.silent.test', 'b.silent.test', 'c.silent.test', 'd.silent.test'],
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
    const asked = dns.questions.length;
    const refusal = await refusalOf(vetCallbackUrl('https://slow.partner.test/cb', strict, resolve));
    expect({ message: refusal.message, temporary: refusal.temporary }).toEqual({
      message: URL_REFUSALS.unavailable,
      temporary: true,
    });
    // It was asked, and never answered.
    expect(dns.questions.slice(asked)).toEqual(
      expect.arrayContaining(['slow.partner.test A', 'slow.partner.test AAAA']),
    );
  });

  it('runs a bounded number of resolutions at once; the others wait for their turn', async () => {
    const resolve = resolverOf({ timeoutMs: 5_000, concurrency: 2 });
    dns.maxPending = 0;
    const answers = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => resolve(`delayed${n}.partner.test`)));
    expect(answers.every((a) => a[0]?.address === '93.184.215.14')).toBe(true);
    // Two resolutions at a time, each an A and an AAAA query on the wire.
    expect(dns.maxPending).toBe(4);
  });

  it('one silent domain holds at most two turns; other names are answered meanwhile, late turns are never used', async () => {
    const resolve = resolverOf({ timeoutMs: 1_500, concurrency: 4 });
    const asked = dns.questions.length;
    const order: string[] = [];
    const silent = ['a', 'b', 'c', 'd'].map((n) =>
      resolve(`${n}.silent.test`).then(
        () => order.push(`${n} answered`),
        () => order.push(`${n} refused`),
      ),
    );
    const other = resolve('hooks.partner.test').then((a) => order.push(`other ${a[0]?.address}`));
    await Promise.all([...silent, other]);
    // The other domain's name did not wait for the silent domain's deadline.
    expect(order[0]).toBe('other 93.184.215.14');
    expect(order.slice(1).sort()).toEqual(['a refused', 'b refused', 'c refused', 'd refused']);
    // Two of the silent names were asked; the two whose turn came after their deadline never were.
    const silentAsked = new Set(
      dns.questions
        .slice(asked)
        .filter((q) => q.includes('silent.test'))
        .map((q) => q.split(' ')[0]),
    );
    expect(silentAsked.size).toBe(2);
  });

  it('answers while every threadpool thread is held, when dns.lookup waits for one', async () => {
    const resolve = resolverOf({ timeoutMs: 5_000 });
    const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
    const dir = await mkdtemp(path.join(tmpdir(), 'threadpool-'));
    const fifos = Array.from({ length: threads }, (_, i) => path.join(dir, `fifo-${i}`));
    for (const fifo of fifos) execFileSync('mkfifo', [fifo]);
    // Opening a FIFO to read holds a threadpool thread until a writer opens it: every thread is held.
    const readers = fifos.map((fifo) => open(fifo, 'r'));
    let looked = false;
    const lookedUp = lookup('localhost').finally(() => {
      looked = true;
    });
    try {
      const vetted = await vetCallbackUrl('https://v4only.partner.test/cb', strict, resolve);
      expect(vetted.addresses).toEqual([{ address: '93.184.215.15', family: 4 }]);
      // dns.lookup, queued behind the held threads, has not answered: it would still be waiting.
      expect(looked).toBe(false);
    } finally {
      for (const fifo of fifos) await openWriter(fifo);
      await Promise.all(readers.map(async (r) => (await r).close()));
      await lookedUp;
      await rm(dir, { recursive: true, force: true });
    }
    expect(looked).toBe(true);
  });

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
