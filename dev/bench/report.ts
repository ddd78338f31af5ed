import type { Summary } from './stats';

type Cores = Record<string, number>;

export interface BenchResult {
  machine: Record<string, unknown>;
  settings: Record<string, unknown>;
  /** `screening`, when measured: one uncached screening of a fresh wallet, the work it adds to each POST. */
  compare: { concurrency: number; floor: Summary; post: Summary; screening?: Summary }[];
  get: { kind: 'live' | 'closed'; concurrency: number; summary: Summary }[];
  /** The provider floor at C=1 (the target's reference). */
  providerFloor?: Summary;
  /** The provider floor at each concurrency the payments ran at. */
  providerFloors?: { concurrency: number; summary: Summary }[];
  payment: { concurrency: number; summary: Summary }[];
  saturation: { concurrency: number; floor: Summary; post: Summary }[];
  open?: {
    created: number;
    creation: Summary;
    held: { rssBytes: number; stickyCacheSize?: number; maxCachedWorkflows: string; heapUsedBytes?: number };
    get: Summary;
    oldestGet: Summary;
    before: { stickyCacheForcedEvictions?: number };
    after: { stickyCacheForcedEvictions?: number };
  };
  scaleOut?: {
    single: Record<number, { summary: Summary; cores: Cores }>;
    double: Record<number, { summary: Summary; cores: Cores }>;
  };
}

const ms = (v: number) => (Number.isFinite(v) ? `${v.toFixed(0)} ms` : '—');
const rate = (v: number) => `${v.toFixed(1)}/s`;
const ratio = (a: number, b: number) => (b > 0 && Number.isFinite(a) ? `${(a / b).toFixed(2)}×` : '—');
const lat = (s: Summary) => `${ms(s.p50)} / ${ms(s.p95)} / ${ms(s.p99)}`;

function rows(result: BenchResult): string[][] {
  const out: string[][] = [['figure', 'C', 'p50 / p95 / p99', 'throughput', 'errors', 'service / floor']];
  for (const c of result.compare) {
    out.push([
      'floor: bare client, workflow + no-op activity',
      String(c.concurrency),
      lat(c.floor),
      rate(c.floor.throughput),
      String(c.floor.errors),
      '',
    ]);
    out.push([
      'POST /v1/payouts (201 with pix_copy_paste)',
      String(c.concurrency),
      lat(c.post),
      rate(c.post.throughput),
      String(c.post.errors),
      `p50 ${ratio(c.post.p50, c.floor.p50)}, throughput ${ratio(c.post.throughput, c.floor.throughput)}`,
    ]);
    if (c.screening) {
      out.push([
        'screening a fresh wallet (token blocklist + sanctions oracle + denylist, uncached): what it adds to POST',
        String(c.concurrency),
        lat(c.screening),
        rate(c.screening.throughput),
        String(c.screening.errors),
        `p50 ${ratio(c.screening.p50, c.floor.p50)} of the floor, ${ratio(c.screening.p50, c.post.p50)} of POST`,
      ]);
    }
  }
  for (const g of result.get) {
    out.push([
      `GET /v1/payouts/{id}, ${g.kind === 'live' ? 'live (PENDING)' : 'closed (COMPLETED)'}`,
      String(g.concurrency),
      lat(g.summary),
      rate(g.summary.throughput),
      String(g.summary.errors),
      '',
    ]);
  }
  const floors =
    result.providerFloors ??
    (result.providerFloor ? [{ concurrency: 1, summary: result.providerFloor }] : []);
  for (const f of floors) {
    out.push([
      'provider floor: payment to settlement.completed webhook (notification latency + 1 confirmation)',
      String(f.concurrency),
      lat(f.summary),
      rate(f.summary.throughput),
      String(f.summary.errors),
      '',
    ]);
  }
  for (const p of result.payment) {
    // Against the floor at the same concurrency when it was measured, else the C=1 floor.
    const floor = floors.find((f) => f.concurrency === p.concurrency)?.summary ?? result.providerFloor;
    out.push([
      'payment to COMPLETED seen by GET',
      String(p.concurrency),
      lat(p.summary),
      rate(p.summary.throughput),
      String(p.summary.errors),
      floor ? `p50 ${ratio(p.summary.p50, floor.p50)} of provider floor` : '',
    ]);
  }
  return out;
}

function markdownTable(table: string[][]): string {
  const [head, ...body] = table;
  return [
    `| ${head!.join(' | ')} |`,
    `| ${head!.map(() => '---').join(' | ')} |`,
    ...body.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

export function renderTable(result: BenchResult): string {
  const table = rows(result);
  const widths = table[0]!.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
  const lines = table.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  '));
  lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  return [...lines, '', ...extraLines(result)].join('\n');
}

function extraLines(result: BenchResult): string[] {
  const lines: string[] = [];
  if (result.saturation.length) {
    const peak = (k: 'floor' | 'post') =>
      result.saturation.reduce((best, s) => (s[k].throughput > best[k].throughput ? s : best));
    const f = peak('floor');
    const p = peak('post');
    lines.push(
      `Saturation: floor peaks at ${rate(f.floor.throughput)} (C=${f.concurrency}, p99 ${ms(f.floor.p99)}); ` +
        `POST peaks at ${rate(p.post.throughput)} (C=${p.concurrency}, p99 ${ms(p.post.p99)}).`,
    );
  }
  if (result.open) {
    const o = result.open;
    const evicted = (o.after.stickyCacheForcedEvictions ?? 0) - (o.before.stickyCacheForcedEvictions ?? 0);
    lines.push(
      `Open payouts: ${o.created} PENDING created; worker RSS ${(o.held.rssBytes / 2 ** 20).toFixed(0)} MiB, ` +
        `sticky cache ${o.held.stickyCacheSize ?? '?'} (WORKER_MAX_CACHED_WORKFLOWS ${o.held.maxCachedWorkflows}), ` +
        `${evicted} forced evictions during the run; GET of random open payouts C=16 ${lat(o.get)}; ` +
        `GET of the 200 oldest C=1 ${lat(o.oldestGet)}.`,
    );
  }
  if (result.scaleOut) {
    for (const [label, runs] of [
      ['one api + one worker', result.scaleOut.single],
      ['two api + two workers', result.scaleOut.double],
    ] as const) {
      for (const [c, run] of Object.entries(runs)) {
        const cpu = Object.entries(run.cores)
          .sort((a, b) => b[1] - a[1])
          .map(([role, cores]) => `${role} ${cores.toFixed(2)}`)
          .join(', ');
        lines.push(
          `Scale-out, ${label}, POST C=${c}: ${rate(run.summary.throughput)}, p50/p95/p99 ${lat(run.summary)}; CPU cores: ${cpu}.`,
        );
      }
    }
  }
  return lines;
}

export function renderMarkdown(result: BenchResult, notes: string): string {
  const m = result.machine;
  return [
    '# Benchmarks',
    '',
    '<!-- Generated by `npm run bench` (dev/bench/main.ts); the analysis under "notes" is kept across runs. -->',
    '',
    `Run at ${String(m.at)} on ${String(m.cpus)} × ${String(m.cpuModel)}, ${String(m.memoryGiB)} GiB, Node.js ${String(m.node)}, ` +
      `${String(m.platform)}; load average at start ${JSON.stringify(m.loadAverageAtStart)}. Temporal: ${String(m.temporalServer)}. ` +
      `Each figure is a closed loop of C clients for ${String(result.settings.seconds)} s after a ${String(result.settings.warmupSeconds)} s warm-up; ` +
      'the floor and the service ran alternately in the same run, against the same servers. Raw figures: `docs/benchmarks.json`.',
    '',
    markdownTable(rows(result)),
    '',
    ...extraLines(result).map((l) => `- ${l}`),
    '',
    ...(result.saturation.length
      ? [
          '## Saturation',
          '',
          markdownTable([
            [
              'C',
              'floor throughput',
              'floor p50 / p95 / p99',
              'POST throughput',
              'POST p50 / p95 / p99',
              'POST / floor throughput',
            ],
            ...result.saturation.map((s) => [
              String(s.concurrency),
              rate(s.floor.throughput),
              lat(s.floor),
              rate(s.post.throughput),
              lat(s.post),
              ratio(s.post.throughput, s.floor.throughput),
            ]),
          ]),
          '',
        ]
      : []),
    notes || '<!-- notes -->\n',
  ].join('\n');
}
