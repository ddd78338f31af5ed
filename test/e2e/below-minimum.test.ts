import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { useStack, type TestStack } from '../support/stack';

// A provider whose spread is larger than our buffer settles less than the guaranteed minimum. The
// payout still COMPLETES (the USDT was delivered and cannot be taken back), and the operator is
// told: the below-minimum counter moves and the PayoutSettledBelowMinimum alert's expression is over
// that counter. The business metrics of a completed payout are recorded as well.

interface AlertRule {
  alert: string;
  expr: string;
}

function alertRule(name: string): AlertRule {
  const file = parse(readFileSync(path.join(__dirname, '../../ops/alerts.yml'), 'utf8')) as {
    groups: { rules: AlertRule[] }[];
  };
  const rule = file.groups.flatMap((g) => g.rules).find((r) => r.alert === name);
  if (!rule) throw new Error(`no alert ${name} in ops/alerts.yml`);
  return rule;
}

async function counterValue(stack: TestStack, name: string, labels: Record<string, string> = {}) {
  const metric = await stack.metrics.registry.getSingleMetric(name)?.get();
  const values = (metric?.values ?? []).filter((v) =>
    Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want),
  );
  return values.reduce((sum, v) => sum + v.value, 0);
}

describe('settlement below the guaranteed minimum, end to end (sandbox spread 10% > buffer 6%)', () => {
  const stack = useStack({ sandboxEnv: { SANDBOX_SPREAD: '0.10' } });
  let apiKey: string;
  beforeAll(async () => {
    ({ apiKey } = await stack.createPartner());
  });

  it('COMPLETES with the USDT delivered, counts it and fires the alert rule', async () => {
    const rule = alertRule('PayoutSettledBelowMinimum');
    // The alert is `increase(<counter>[15m]) > 0`: it fires as soon as the counter moves.
    const counter = /increase\((\w+)\[/.exec(rule.expr)?.[1];
    expect(counter).toBe('payout_settlement_below_minimum_total');
    expect(rule.expr).toMatch(/> 0\s*$/);
    const before = await counterValue(stack, counter!);

    const { payout, receiver } = await stack.createPayout(apiKey);
    await stack.pay(payout.pix_copy_paste);
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED']);

    // 100 / (5.50 x 1.10) = 16.528925 USDT, below the 17.152658 guaranteed with a 6% buffer.
    expect(done).toMatchObject({
      status: 'COMPLETED',
      min_amount_usdt: 17.152658,
      settled_amount_usdt: 16.528925,
    });
    expect(await stack.chain.transfersTo(receiver)).toEqual({
      count: 1,
      total: 16_528_925n,
      txHashes: [done.blockchain_tx_id],
    });
    // The alert activity runs after COMPLETED is recorded: wait for the workflow to finish.
    const { rows } = await stack.db.query<{ workflow_id: string }>(
      'SELECT workflow_id FROM payouts WHERE id = $1',
      [payout.id],
    );
    await stack.temporal.workflow.getHandle(rows[0]!.workflow_id).result();
    expect((await counterValue(stack, counter!)) - before).toBe(1);

    // What a payments team watches: the terminal counter and the duration histogram, by outcome.
    expect(
      await counterValue(stack, 'payouts_terminal_total', { status: 'COMPLETED', failure_reason: 'none' }),
    ).toBe(1);
    const duration = await stack.metrics.registry.getSingleMetric('payout_duration_seconds')?.get();
    const count = duration?.values.find(
      (v) =>
        (v as { metricName?: string }).metricName === 'payout_duration_seconds_count' &&
        v.labels.outcome === 'completed',
    );
    expect(count?.value).toBe(1);
  }, 90_000);
});
