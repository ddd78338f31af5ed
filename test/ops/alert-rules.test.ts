import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { REPLICATED_GAUGES } from '../support/replicated-gauges';

// ops/alerts.yml and ops/prometheus.yml through Prometheus's own promtool (the release the compose
// file runs, provisioned into .tools/bin by dev/provision.sh): the rules load, the configuration
// parses, and the unit tests of ops/alerts.test.yml pass (replicas counted once, labels and runbook
// URLs rendered). Then what promtool cannot see: every label a message names survives its
// expression's aggregation, and gauges that every replica reports are never summed.

const ROOT = path.resolve(__dirname, '../..');
const PROMTOOL = path.join(ROOT, '.tools/bin/promtool');
const run = promisify(execFile);

interface Rule {
  alert: string;
  expr: string;
  annotations: Record<string, string>;
}
const rules = (
  parse(readFileSync(path.join(ROOT, 'ops/alerts.yml'), 'utf8')) as { groups: { rules: Rule[] }[] }
).groups.flatMap((g) => g.rules);

/** The `by (...)` labels of each aggregation in a PromQL expression; null for one without `by`. */
function aggregations(expr: string): { op: string; by: string[] | null; body: string }[] {
  const found = [];
  const re =
    /\b(sum|min|max|avg|count|stddev|stdvar|topk|bottomk|quantile|group)\s*(?:by\s*\(([^)]*)\)\s*)?\(/g;
  for (const m of expr.matchAll(re)) {
    let depth = 1;
    let i = m.index + m[0].length;
    for (; i < expr.length && depth > 0; i++) depth += expr[i] === '(' ? 1 : expr[i] === ')' ? -1 : 0;
    found.push({
      op: m[1]!,
      by: m[2] === undefined ? null : m[2].split(',').map((l) => l.trim()),
      body: expr.slice(m.index + m[0].length, i - 1),
    });
  }
  return found;
}

describe('ops/alerts.yml with promtool', () => {
  beforeAll(() => {
    if (!existsSync(PROMTOOL)) throw new Error(`${PROMTOOL} is missing: run 'npm run provision'`);
  });

  it('is promtool v3.5.0, the Prometheus of docker-compose.yml', async () => {
    const { stdout } = await run(PROMTOOL, ['--version']);
    expect(stdout).toMatch(/^promtool, version 3\.5\.0 /);
    expect(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8')).toContain('prom/prometheus:v3.5.0');
  });

  it('loads every rule, and the Prometheus configuration parses', async () => {
    const rulesOut = await run(PROMTOOL, ['check', 'rules', 'ops/alerts.yml'], { cwd: ROOT });
    expect(rulesOut.stdout).toContain(`SUCCESS: ${rules.length} rules found`);
    // --syntax-only: the rule file it names is the container's path (/etc/prometheus/alerts.yml).
    await run(PROMTOOL, ['check', 'config', '--syntax-only', 'ops/prometheus.yml'], { cwd: ROOT });
  }, 60_000);

  it('passes its unit tests (ops/alerts.test.yml)', async () => {
    const { stdout } = await run(PROMTOOL, ['test', 'rules', 'alerts.test.yml'], {
      cwd: path.join(ROOT, 'ops'),
    }).catch((err: { stdout?: string; stderr?: string }) => {
      throw new Error(`promtool test rules failed:\n${err.stdout ?? ''}${err.stderr ?? ''}`);
    });
    expect(stdout).toContain('SUCCESS');
  }, 60_000);

  it('keeps every label a message names', () => {
    for (const rule of rules) {
      const named = new Set(
        Object.values(rule.annotations).flatMap((text) =>
          [...text.matchAll(/\$labels\.(\w+)/g)].map((m) => m[1]!),
        ),
      );
      for (const label of named)
        for (const { op, by } of aggregations(rule.expr))
          expect({ alert: rule.alert, label, op, kept: by?.includes(label) ?? false }).toMatchObject({
            kept: true,
          });
    }
    expect(aggregations('max by (kind) (x{a="b"}) > 0 or sum(rate(y[5m]))').map((a) => a.by)).toEqual([
      ['kind'],
      null,
    ]);
  });

  it('never sums a gauge that every replica reports', () => {
    for (const rule of rules)
      for (const { op, body } of aggregations(rule.expr))
        for (const gauge of REPLICATED_GAUGES)
          if (new RegExp(`\\b${gauge}\\b`).test(body))
            expect({ alert: rule.alert, gauge, op }).toEqual({
              alert: rule.alert,
              gauge,
              op: expect.stringMatching(/^(max|min)$/),
            });
  });

  it('links an absolute runbook URL, from the configured base, to a section that exists', () => {
    const prometheus = parse(readFileSync(path.join(ROOT, 'ops/prometheus.yml'), 'utf8')) as {
      global: { external_labels: Record<string, string> };
    };
    expect(new URL(prometheus.global.external_labels.runbook_base_url!).protocol).toBe('https:');
    const BASE = '{{ $externalLabels.runbook_base_url }}/';
    for (const rule of rules) {
      const url = rule.annotations.runbook_url ?? '';
      expect({ alert: rule.alert, base: url.startsWith(BASE) }).toEqual({ alert: rule.alert, base: true });
      expect(rule.annotations).not.toHaveProperty('runbook');
      const [file] = url.slice(BASE.length).split('#');
      expect({ alert: rule.alert, file, exists: existsSync(path.join(ROOT, 'docs', file!)) }).toMatchObject({
        exists: true,
      });
    }
  });
});
