import type { WorkflowCost } from './cost';
import type { Summary } from './stats';

type Cores = Record<string, number>;

export interface BenchResult {
  machine: Record<string, unknown>;
  settings: Record<string, unknown>;
  /** `screening`, when measured: one uncached screening of a fresh wallet, the work it adds to each POST. */
  /** `updateFloor`: a bare update-with-start of an open workflow whose update answers at once. */
  compare: {
    concurrency: number;
    floor: Summary;
    updateFloor?: Summary;
    post: Summary;
    /**
     * POST answers before the worker runs the payout's first task (D81): how long the worker's backlog
     * took to drain after the window, and the throughput counted over the window and that drain.
     */
    postBacklog?: { drainMs: number; sustainedThroughput: number };
    screening?: Summary;
  }[];
  /** `floor` (live only): a bare query of an open workflow, measured just before. */
  get: { kind: 'live' | 'closed'; concurrency: number; summary: Summary; floor?: Summary }[];
  /** The provider floor at C=1 (the target's reference). */
  providerFloor?: Summary;
  /** The provider floor at each concurrency the payments ran at. */
  providerFloors?: { concurrency: number; summary: Summary }[];
  payment: { concurrency: number; summary: Summary }[];
  /** Payment to COMPLETED at C=1, step by step: the median of each step across the payouts. */
  paymentBreakdown?: { payouts: number; steps: { step: string; ms: number }[] };
  /** The same at each payment concurrency. */
  paymentBreakdowns?: { concurrency: number; payouts: number; steps: { step: string; ms: number }[] }[];
  saturation: { concurrency: number; floor: Summary; post: Summary }[];
  /** What one payout costs end to end (dev/bench/cost.ts). */
  cost?: {
    payouts: number;
    temporal: {
      payouts: number;
      byType: Record<string, WorkflowCost>;
      total: WorkflowCost;
    };
    servicePostgres: { transactionsPerPayout: number; rowsWrittenPerPayout: number };
    temporalPostgres?: { transactionsPerPayout: number; rowsWrittenPerPayout: number };
  };
  open?: {
    created: number;
    creation: Summary;
    held: { rssBytes: number; stickyCacheSize?: number; maxCachedWorkflows: string; heapUsedBytes?: number };
    get: Summary;
    oldestGet: Summary;
    before: { stickyCacheForcedEvictions?: number };
    after: { stickyCacheForcedEvictions?: number };
  };
  /** Payouts end to end per second by number of worker and api processes (measureScaling). */
  scaling?: {
    workers: number;
    apis: number;
    concurrency: number;
    summary: Summary;
    cores: Cores;
    persistenceTransactionsPerSecond?: number;
  }[];
  /** Runs before the scaling table replaced it. */
  scaleOut?: {
    single: Record<number, { summary: Summary; cores: Cores }>;
    double: Record<number, { summary: Summary; cores: Cores }>;
  };
}

/** POST's throughput counting the worker's backlog after the window (D81), when it was measured. */
const postThroughput = (c: BenchResult['compare'][number]) =>
  c.postBacklog?.sustainedThroughput ?? c.post.throughput;
const ms = (v: number) => (Number.isFinite(v) ? `${v.toFixed(0)} ms` : '—');
const rate = (v: number) => `${v.toFixed(1)}/s`;
const ratio = (a: number, b: number) => (b > 0 && Number.isFinite(a) ? `${(a / b).toFixed(2)}×` : '—');
const lat = (s: Summary) => `${ms(s.p50)} / ${ms(s.p95)} / ${ms(s.p99)}`;
/** One figure's row of the main table. */
const figure = (label: string, concurrency: number, s: Summary, note = ''): string[] => [
  label,
  String(concurrency),
  lat(s),
  rate(s.throughput),
  String(s.errors),
  note,
];

function rows(result: BenchResult): string[][] {
  const out: string[][] = [['figure', 'C', 'p50 / p95 / p99', 'throughput', 'errors', 'service / floor']];
  for (const c of result.compare) {
    out.push(figure('floor: bare client, workflow + no-op activity', c.concurrency, c.floor));
    if (c.updateFloor) {
      out.push(
        figure(
          'floor: bare update-with-start of an open workflow, update answers at once',
          c.concurrency,
          c.updateFloor,
        ),
      );
    }
    const ref = c.updateFloor ?? c.floor;
    out.push(
      figure(
        'POST /v1/payouts (201 with pix_copy_paste)',
        c.concurrency,
        c.post,
        `p50 ${ratio(c.post.p50, ref.p50)}, throughput ${ratio(postThroughput(c), ref.throughput)} of ${c.updateFloor ? 'update-with-start' : 'workflow + activity'}` +
          (c.postBacklog
            ? ` (worker backlog drained ${ms(c.postBacklog.drainMs)} after the window, counted in)`
            : ''),
      ),
    );
    if (c.screening) {
      out.push(
        figure(
          'screening a fresh wallet (token blocklist + sanctions oracle + denylist, uncached): what it adds to POST',
          c.concurrency,
          c.screening,
          `p50 ${ratio(c.screening.p50, c.post.p50)} of POST`,
        ),
      );
    }
  }
  for (const g of result.get) {
    if (g.floor) {
      out.push(figure('floor: bare query of an open workflow', g.concurrency, g.floor));
    }
    out.push(
      figure(
        `GET /v1/payouts/{id}, ${g.kind === 'live' ? 'live (PENDING)' : 'closed (COMPLETED)'}`,
        g.concurrency,
        g.summary,
        g.floor ? `p99 ${ratio(g.summary.p99, g.floor.p99)} of query` : '',
      ),
    );
  }
  const floors =
    result.providerFloors ??
    (result.providerFloor ? [{ concurrency: 1, summary: result.providerFloor }] : []);
  for (const f of floors) {
    out.push(
      figure(
        'provider floor: payment to settlement.completed webhook (notification latency + 1 confirmation)',
        f.concurrency,
        f.summary,
      ),
    );
  }
  for (const p of result.payment) {
    // Against the floor at the same concurrency when it was measured, else the C=1 floor.
    const floor = floors.find((f) => f.concurrency === p.concurrency)?.summary ?? result.providerFloor;
    out.push(
      figure(
        'payment to COMPLETED seen by GET',
        p.concurrency,
        p.summary,
        floor ? `p50 ${ratio(p.summary.p50, floor.p50)} of provider floor` : '',
      ),
    );
  }
  return out;
}

/** The targets docs/BENCHMARKS.md states, each as measured in this run: figure, target, measured, met. */
export function targets(result: BenchResult): string[][] {
  const out: string[][] = [['target', 'goal', 'measured', 'met']];
  const met = (ok: boolean | undefined) => (ok === undefined ? 'not measured' : ok ? 'yes' : 'no');
  const add = (
    name: string,
    goal: string,
    value: number | undefined,
    ok: (v: number) => boolean,
    unit = '×',
  ) =>
    out.push([
      name,
      goal,
      value === undefined || !Number.isFinite(value) ? '—' : `${value.toFixed(2)}${unit}`,
      met(value === undefined || !Number.isFinite(value) ? undefined : ok(value)),
    ]);
  const compare = (c: number) => result.compare.find((x) => x.concurrency === c && x.updateFloor);
  const c1 = compare(1);
  add(
    'POST p50 / update-with-start p50, C=1',
    '<= 1.30×',
    c1 && c1.post.p50 / c1.updateFloor!.p50,
    (v) => v <= 1.3,
  );
  for (const c of [16, 64]) {
    const x = compare(c);
    add(
      `POST throughput / update-with-start throughput, C=${c}`,
      '>= 0.90×',
      x && postThroughput(x) / x.updateFloor!.throughput,
      (v) => v >= 0.9,
    );
  }
  const live = result.get.find((g) => g.kind === 'live' && g.concurrency === 16 && g.floor);
  add(
    'live GET p99 / query p99, C=16',
    '<= 1.25×',
    live && live.summary.p99 / live.floor!.p99,
    (v) => v <= 1.25,
  );
  const closed = result.get.find((g) => g.kind === 'closed' && g.concurrency === 16);
  add('closed GET p99, C=16', '<= 10 ms', closed?.summary.p99, (v) => v <= 10, ' ms');
  const pay = result.payment.find((p) => p.concurrency === 1);
  add('payment to COMPLETED p50, C=1', '<= 250 ms', pay?.summary.p50, (v) => v <= 250, ' ms');
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

const COST_COLUMNS = [
  ['workflows', 'workflows'],
  ['historyEvents', 'history events'],
  ['workflowTasks', 'workflow tasks'],
  ['activityTasks', 'activity tasks'],
  ['localActivities', 'local activities'],
  ['timers', 'timers'],
  ['signals', 'signals'],
  ['updates', 'updates'],
  ['searchAttributeUpserts', 'search-attribute upserts'],
  ['actions', 'actions (Temporal Cloud, estimated)'],
] as const;

function costSection(cost: NonNullable<BenchResult['cost']>): string[] {
  const line = (name: string, c: WorkflowCost) => [name, ...COST_COLUMNS.map(([k]) => String(c[k]))];
  const pg = (label: string, p?: { transactionsPerPayout: number; rowsWrittenPerPayout: number }) =>
    p
      ? [
          `- ${label}: ${p.transactionsPerPayout} transactions and ${p.rowsWrittenPerPayout} rows written per payout.`,
        ]
      : [];
  return [
    `### Cost per payout (${cost.payouts} payouts, one at a time: POST, payment, COMPLETED, callback)`,
    '',
    markdownTable([
      ['per payout', ...COST_COLUMNS.map(([, label]) => label)],
      ...Object.entries(cost.temporal.byType).map(([type, c]) => line(type, c)),
      line('total', cost.temporal.total),
    ]),
    '',
    '- Not in these counts: queries (each live GET is one billed action), and heartbeats (none).',
    ...pg("The service's PostgreSQL", cost.servicePostgres),
    ...pg("Temporal's PostgreSQL (persistence and visibility)", cost.temporalPostgres),
    '',
  ];
}

function scalingSection(scaling: NonNullable<BenchResult['scaling']>): string[] {
  return [
    `### Scaling: payouts end to end (POST, payment, COMPLETED), C=${scaling[0]!.concurrency}`,
    '',
    markdownTable([
      [
        'workers',
        'apis',
        'payouts/s',
        'p50 / p95 / p99',
        'errors',
        'CPU cores by role',
        "Temporal's database, transactions/s",
      ],
      ...scaling.map((r) => [
        String(r.workers),
        String(r.apis),
        rate(r.summary.throughput),
        lat(r.summary),
        String(r.summary.errors),
        Object.entries(r.cores)
          .sort((a, b) => b[1] - a[1])
          .map(([role, cores]) => `${role} ${cores.toFixed(2)}`)
          .join(', '),
        r.persistenceTransactionsPerSecond === undefined ? '—' : String(r.persistenceTransactionsPerSecond),
      ]),
    ]),
    '',
  ];
}

/** Temporal Cloud's default namespace limit (on-demand floor), and what one Temporal Resource Unit adds. */
const CLOUD_DEFAULT_APS = 500;

/**
 * The capacity model, from this run's own figures: actions per payout (cost), payouts per second per
 * worker core and per history shard (the best scaling row), and what two target rates need.
 */
export function capacityLines(result: BenchResult): string[] {
  const lines: string[] = [];
  const actions = result.cost?.temporal.total.actions;
  const best = result.scaling?.reduce((a, b) => (b.summary.throughput > a.summary.throughput ? b : a));
  const shards = Number(result.machine.historyShards ?? NaN);
  for (const [label, perSecond] of [
    ['1,000 payouts a minute', 1000 / 60],
    ['100 payouts a second', 100],
  ] as const) {
    const parts: string[] = [];
    if (actions !== undefined) {
      const aps = perSecond * actions;
      parts.push(
        `Temporal Cloud: ${aps.toFixed(0)} actions/s (${actions} per payout, before partners' live GETs, one each), ` +
          (aps <= CLOUD_DEFAULT_APS
            ? `within a namespace's default ${CLOUD_DEFAULT_APS} APS`
            : `${(aps / CLOUD_DEFAULT_APS).toFixed(1)}× a namespace's default ${CLOUD_DEFAULT_APS} APS (provisioned capacity: ${Math.ceil(aps / CLOUD_DEFAULT_APS)} TRUs of 500)`),
      );
    }
    if (best) {
      const workerCores = best.cores.worker ?? 0;
      const perCore = workerCores > 0 ? best.summary.throughput / workerCores : NaN;
      if (Number.isFinite(perCore))
        parts.push(
          `workers: ${Math.ceil(perSecond / perCore)} cores at the measured ${perCore.toFixed(1)} payouts/s per worker core`,
        );
      // The server's own PostgreSQL is part of what Temporal costs (the dev server keeps SQLite inside).
      const serverCores =
        (best.cores['temporal server'] ?? 0) + (best.cores['temporal server postgres'] ?? 0) ||
        best.cores['temporal dev server'];
      if (serverCores)
        parts.push(
          `Temporal: ${Math.ceil((perSecond / best.summary.throughput) * serverCores)} cores (server and its database) at the measured ${(best.summary.throughput / serverCores).toFixed(1)} payouts/s per core`,
        );
      if (Number.isFinite(shards) && shards > 0)
        parts.push(
          `history shards: this run did ${(best.summary.throughput / shards).toFixed(1)} payouts/s per shard`,
        );
    }
    if (parts.length) lines.push(`${label}: ${parts.join('; ')}.`);
  }
  return lines;
}

/** One run's section: which server, the targets, the figures, saturation. */
function runSection(title: string, result: BenchResult): string[] {
  const m = result.machine;
  return [
    `## ${title}`,
    '',
    `Run at ${String(m.at)} on ${String(m.cpus)} × ${String(m.cpuModel)}, ${String(m.memoryGiB)} GiB, Node.js ${String(m.node)}, ` +
      `${String(m.platform)}; load average at start ${JSON.stringify(m.loadAverageAtStart)}. Temporal: ${String(m.temporalServer)}. ` +
      `Each figure is a closed loop of C clients for ${String(result.settings.seconds)} s after a ${String(result.settings.warmupSeconds)} s warm-up; ` +
      'the floors and the service ran alternately in the same run, against the same servers.',
    '',
    markdownTable(targets(result)),
    '',
    markdownTable(rows(result)),
    '',
    ...extraLines(result).map((l) => `- ${l}`),
    '',
    ...(result.paymentBreakdown
      ? [
          `### Payment to COMPLETED, step by step (C=1, median of the ${result.paymentBreakdown.payouts} payouts whose histories have the most common shape)`,
          '',
          markdownTable([
            ['step (each ends with the event named)', 'ms'],
            ...result.paymentBreakdown.steps.map((s) => [s.step, s.ms.toFixed(0)]),
          ]),
          '',
        ]
      : []),
    ...(result.cost ? costSection(result.cost) : []),
    ...(result.scaling?.length ? scalingSection(result.scaling) : []),
    ...(capacityLines(result).length
      ? ['### Capacity model (from this run)', '', ...capacityLines(result).map((l) => `- ${l}`), '']
      : []),
    ...(result.saturation.length
      ? [
          `### Saturation (${title})`,
          '',
          markdownTable([
            [
              'C',
              'floor throughput',
              'floor p50 / p95 / p99',
              'POST throughput',
              'POST p50 / p95 / p99',
              'POST / workflow + activity floor throughput',
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
  ];
}

/** docs/BENCHMARKS.md: a section per server a result exists for, then the hand-written notes. */
export function renderMarkdown(
  runs: { title: string; file: string; result: BenchResult }[],
  notes: string,
): string {
  return [
    '# Benchmarks',
    '',
    '<!-- Generated by `npm run bench` (dev/bench/main.ts); the analysis under "notes" is kept across runs. -->',
    '',
    `Raw figures: ${runs.map((r) => `\`${r.file}\``).join(', ')}. Each section is one run of \`npm run bench\` on one server; ` +
      'ratios compare the service with floors measured in that same run.',
    '',
    ...runs.flatMap((r) => runSection(r.title, r.result)),
    notes || '<!-- notes -->\n',
  ].join('\n');
}
