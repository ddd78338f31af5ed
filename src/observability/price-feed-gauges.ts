import { Gauge, type Registry } from 'prom-client';
import type { FeedRead, PriceFeeds } from '../adapters/rates/price-feeds';
import type { Logger } from './logger';

/** One chain read serves the gauges of one scrape (prom-client collects each gauge on its own). */
const READ_REUSE_MS = 1_000;

/**
 * QUOTE_SOURCE=price-feeds: each feed as the chain has it at scrape time (not as the last quote saw
 * it, which a quiet api would leave to age): its age, its answer, whether it could be read, and the
 * age past which the api refuses to quote. The alert PriceFeedStale compares the first and the last;
 * PriceFeedUnreadable watches the third.
 */
export function registerPriceFeedGauges(
  registry: Registry,
  feeds: Pick<PriceFeeds, 'read'>,
  maxAgeSeconds: number,
  logger: Logger,
  now: () => number = Date.now,
): void {
  let last: { at: number; reads: Promise<FeedRead[]> } | undefined;
  const readOnce = () => {
    if (!last || now() - last.at > READ_REUSE_MS) last = { at: now(), reads: feeds.read() };
    return last.reads;
  };
  const labelNames = ['feed', 'address'] as const;
  const collectInto = (
    gauge: Gauge<(typeof labelNames)[number]>,
    value: (r: FeedRead) => number | undefined,
  ) =>
    async function collect() {
      try {
        const reads = await readOnce();
        gauge.reset();
        for (const r of reads) {
          const v = value(r);
          if (v !== undefined) gauge.set({ feed: r.feed, address: r.address }, v);
        }
      } catch (err) {
        logger.warn({ err }, 'price feed gauges: read failed');
      }
    };

  const age: Gauge<(typeof labelNames)[number]> = new Gauge({
    name: 'price_feed_age_seconds',
    help: "Seconds since the feed's latest round was updated on chain (absent while it cannot be read)",
    labelNames,
    registers: [registry],
    collect: () =>
      collectInto(age, (r) => ('error' in r ? undefined : Math.floor(now() / 1000) - r.updatedAt))(),
  });
  const answer: Gauge<(typeof labelNames)[number]> = new Gauge({
    name: 'price_feed_answer',
    help: "The feed's latest answer in USD (for display: the rate itself is computed exactly)",
    labelNames,
    registers: [registry],
    collect: () =>
      collectInto(answer, (r) => ('error' in r ? undefined : Number(r.answer) / 10 ** r.decimals))(),
  });
  const readable: Gauge<(typeof labelNames)[number]> = new Gauge({
    name: 'price_feed_readable',
    help: '1 when the feed answered its latest round at scrape time, 0 when it could not be read',
    labelNames,
    registers: [registry],
    collect: () => collectInto(readable, (r) => ('error' in r ? 0 : 1))(),
  });
  new Gauge({
    name: 'price_feed_max_age_seconds',
    help: 'PRICE_FEED_MAX_AGE_SECONDS: a feed older than this gives no rate (POST answers 503)',
    registers: [registry],
  }).set(maxAgeSeconds);
}
