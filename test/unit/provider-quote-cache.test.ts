import { createCachedQuote } from '../../src/adapters/provider/quote-cache';

/** An in-process provider whose answers the test releases by hand. */
function controllableProvider() {
  const pending: { resolve: (rate: string) => void; reject: (err: Error) => void }[] = [];
  return {
    calls: () => pending.length,
    resolve: (i: number, rate: string) => pending[i]!.resolve(rate),
    reject: (i: number, err: Error) => pending[i]!.reject(err),
    provider: {
      getQuote: () =>
        new Promise<{ rate: string; quotedAt: string }>((resolve, reject) => {
          pending.push({
            resolve: (rate) => resolve({ rate, quotedAt: '2026-11-21T22:00:00.000Z' }),
            reject,
          });
        }),
    },
  };
}

test('concurrent callers share one request; the result is reused within the TTL', async () => {
  let clock = 0;
  const p = controllableProvider();
  const quote = createCachedQuote(p.provider, { ttlMs: 30_000, now: () => clock });
  const waiting = [quote(), quote(), quote()];
  expect(p.calls()).toBe(1);
  p.resolve(0, '5.50');
  expect((await Promise.all(waiting)).map((q) => q.rate)).toEqual(['5.50', '5.50', '5.50']);

  clock = 29_999;
  expect((await quote()).rate).toBe('5.50');
  expect(p.calls()).toBe(1);
});

test('the TTL counts from when the request started, not when it ended', async () => {
  let clock = 0;
  const p = controllableProvider();
  const quote = createCachedQuote(p.provider, { ttlMs: 30_000, now: () => clock });
  const first = quote();
  clock = 20_000; // a slow provider
  p.resolve(0, '5.50');
  await first;
  clock = 30_000;
  const second = quote();
  expect(p.calls()).toBe(2);
  p.resolve(1, '5.60');
  expect((await second).rate).toBe('5.60');
});

test('a failure reaches every waiting caller, is not cached, and the next call tries again', async () => {
  const p = controllableProvider();
  const quote = createCachedQuote(p.provider, { ttlMs: 30_000, now: () => 0 });
  const a = quote();
  const b = quote();
  p.reject(0, new Error('provider down'));
  await expect(a).rejects.toThrow('provider down');
  await expect(b).rejects.toThrow('provider down');

  const c = quote();
  expect(p.calls()).toBe(2);
  p.resolve(1, '5.50');
  expect((await c).rate).toBe('5.50');
});
