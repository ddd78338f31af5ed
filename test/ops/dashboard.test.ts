import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { UsdtLedger } from '../../src/adapters/chain/ledger-types';
import type { Db } from '../../src/adapters/db/pool';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { registerCallbackGauges, registerTreasuryGauges } from '../../src/observability/ops-gauges';
import { registerOpenPayoutGauges } from '../../src/observability/payout-gauges';
import { REPLICATED_GAUGES } from '../support/replicated-gauges';

// The Grafana dashboard reads only metrics the service registers (or the Temporal SDK's temporal_*),
// and shows every view a payments team asks for. Registration does no I/O: nothing is collected here.

const ROOT = path.resolve(__dirname, '../..');
const dashboard = JSON.parse(
  readFileSync(path.join(ROOT, 'ops/grafana/dashboards/payouts.json'), 'utf8'),
) as {
  uid: string;
  templating: { list: { name: string; type: string; query: string }[] };
  panels: {
    title: string;
    datasource?: { uid: string };
    targets: { expr: string; datasource?: { uid: string } }[];
  }[];
};

function serviceMetricNames(): Set<string> {
  const metrics = createMetrics();
  const logger = createLogger({ level: 'silent', name: 'test' });
  const db = {} as Db;
  registerOpenPayoutGauges(metrics.registry, db, logger);
  registerCallbackGauges(metrics.registry, db, logger);
  registerTreasuryGauges(
    metrics.registry,
    { treasuryAddress: () => '0x0000000000000000000000000000000000000001' } as unknown as UsdtLedger,
    logger,
  );
  return new Set(metrics.registry.getMetricsAsArray().map((m) => m.name));
}

describe('Grafana dashboard (ops/grafana/dashboards/payouts.json)', () => {
  it('queries only metrics that exist', () => {
    const known = serviceMetricNames();
    for (const panel of dashboard.panels)
      for (const { expr } of panel.targets)
        for (const [name] of expr.matchAll(/\b[a-z][a-z0-9_]*(?=\{|\[)/g)) {
          const family = name.replace(/_(bucket|count|sum)$/, '');
          const exists = known.has(family) || known.has(name) || name.startsWith('temporal_');
          expect({ panel: panel.title, name, exists }).toEqual({ panel: panel.title, name, exists: true });
        }
  });

  it('has the views of a payments team', () => {
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr)).join('\n');
    for (const needed of [
      'payouts_open',
      'payout_transitions_total',
      'route="/v1/payouts"',
      'route="/v1/payouts/:id"',
      'payout_paid_to_completed_seconds',
      'provider_call_duration_seconds_count{outcome="error"}',
      'temporal_activity_execution_failed',
      'partner_callback_events',
      'payout_refund_cases_opened_total',
      'treasury_usdt_balance',
    ])
      expect(exprs).toContain(needed);
  });

  it('reads whichever Prometheus the viewer picks (a datasource variable), in every panel', () => {
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus' }),
    );
    for (const panel of dashboard.panels) {
      expect({ panel: panel.title, uid: panel.datasource?.uid }).toEqual({
        panel: panel.title,
        uid: '${datasource}',
      });
      for (const target of panel.targets)
        if (target.datasource) expect(target.datasource.uid).toBe('${datasource}');
    }
  });

  it('takes the max or min of gauges every replica reports, never their sum', () => {
    for (const panel of dashboard.panels)
      for (const { expr } of panel.targets)
        for (const gauge of REPLICATED_GAUGES)
          if (new RegExp(`\\b${gauge}\\b`).test(expr))
            expect({ panel: panel.title, expr }).toEqual({
              panel: panel.title,
              expr: expect.stringMatching(new RegExp(`^(max|min) by \\(\\w+\\) \\(${gauge}\\)$`)),
            });
  });
});
