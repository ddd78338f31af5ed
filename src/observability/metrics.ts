import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The service's metrics, one registry per process, exposed on METRICS_PORT in Prometheus format. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpRequestDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency by route and status code',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    payoutTransitions: new Counter({
      name: 'payout_transitions_total',
      help: 'Payout state changes written to the read model, by new status',
      labelNames: ['status'],
      registers: [registry],
    }),
    settlementBelowMinimum: new Counter({
      name: 'payout_settlement_below_minimum_total',
      help: 'Payouts settled with less USDT than their guaranteed min_amount_usdt',
      registers: [registry],
    }),
    webhooks: new Counter({
      name: 'webhook_deliveries_total',
      help: 'Provider webhook deliveries by outcome (received, duplicate, rejected, failed)',
      labelNames: ['provider', 'outcome'],
      registers: [registry],
    }),
    providerCallDuration: new Histogram({
      name: 'provider_call_duration_seconds',
      help: 'Payment provider API latency by operation and outcome',
      labelNames: ['operation', 'outcome'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    refundCasesOpened: new Counter({
      name: 'payout_refund_cases_opened_total',
      help: 'PIX payments received and not settled (late, wrong amount or charge, repeated, or the payout failed); each is a refund case',
      labelNames: ['kind'],
      registers: [registry],
    }),
    transferClaimConflicts: new Counter({
      name: 'payout_transfer_claim_conflicts_total',
      help: 'Settlements refused because their on-chain transfer already settled another payout',
      registers: [registry],
    }),
    treasuryInsufficientFunds: new Counter({
      name: 'payout_treasury_insufficient_funds_total',
      help: 'Treasury transfer attempts refused for lack of USDT or gas in the treasury (retried until topped up)',
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
