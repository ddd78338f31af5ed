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
      help: 'Provider webhook deliveries by outcome (received, duplicate, rejected, throttled, failed)',
      labelNames: ['provider', 'outcome'],
      registers: [registry],
    }),
    webhookEventPaths: new Counter({
      name: 'webhook_event_paths_total',
      help: 'New provider events by the way they reached their payout: signal (the api signalled it, D77) or workflow (a provider-event workflow took it)',
      labelNames: ['provider', 'path'],
      registers: [registry],
    }),
    payoutChargePaths: new Counter({
      name: 'payout_charge_paths_total',
      help: "POSTs that started or joined a payout's workflow, by who made its PIX charge: api (created before a plain start, D81) or workflow (update-with-start: the first task creates it, or a payout started already is joined)",
      labelNames: ['path'],
      registers: [registry],
    }),
    providerCallDuration: new Histogram({
      name: 'provider_call_duration_seconds',
      help: 'Payment provider API latency by operation and outcome',
      labelNames: ['operation', 'outcome'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    paidToCompleted: new Histogram({
      name: 'payout_paid_to_completed_seconds',
      help: 'From the PIX payment (paid_at) to the USDT confirmed on chain (confirmed_at), per completed payout',
      buckets: [5, 15, 30, 60, 120, 300, 600, 1800, 3600, 21600],
      registers: [registry],
    }),
    payoutDuration: new Histogram({
      name: 'payout_duration_seconds',
      help: 'Time from payout creation to its terminal state, by outcome (completed, failed)',
      labelNames: ['outcome'],
      // A payout waits for the payer (up to the charge expiry, 1 h by default), then for settlement.
      buckets: [30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 21600, 43200],
      registers: [registry],
    }),
    payoutsTerminal: new Counter({
      name: 'payouts_terminal_total',
      help: 'Payouts that reached a terminal status, by status and failure reason (none when completed)',
      labelNames: ['status', 'failure_reason'],
      registers: [registry],
    }),
    callbackDeliveries: new Counter({
      name: 'partner_callback_deliveries_total',
      help: 'Partner callback delivery attempts by outcome (delivered, failed, not_configured, gave_up)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    refundCasesOpened: new Counter({
      name: 'payout_refund_cases_opened_total',
      help: 'PIX payments received and not settled (late, wrong amount or charge, repeated, or the payout failed); each is a refund case',
      labelNames: ['kind'],
      registers: [registry],
    }),
    settlementsAfterEnd: new Counter({
      name: 'payout_settlements_after_end_total',
      help: "Settlement reports (the provider sent USDT) for payouts that had ended FAILED, or COMPLETED by another transaction, once per payout and transaction, by the payout's status then; each holds the payout's refund cases",
      labelNames: ['status'],
      registers: [registry],
    }),
    refundCaseTransitions: new Counter({
      name: 'payout_refund_case_transitions_total',
      help: 'Refund cases entering a status (awaiting_approval, returning, returned, refused) by their refund workflow',
      labelNames: ['status'],
      registers: [registry],
    }),
    transferClaimConflicts: new Counter({
      name: 'payout_transfer_claim_conflicts_total',
      help: 'Settlements refused because their on-chain transfer already settled another payout',
      registers: [registry],
    }),
    attentionRaised: new Counter({
      name: 'payout_attention_raised_total',
      help: 'Attention items raised: a payout waiting on an unknown, or flagged for review, by kind',
      labelNames: ['kind'],
      registers: [registry],
    }),
    transferMismatches: new Counter({
      name: 'payout_transfer_mismatches_total',
      help: 'Payouts whose mined settlement transaction does not pay them (no matching USDT transfer, or every matching one claimed by other payouts), once per payout and transaction; each waits in PROCESSING for an operator',
      labelNames: ['reason'],
      registers: [registry],
    }),
    treasuryTransfersRepriced: new Counter({
      name: 'payout_treasury_transfers_repriced_total',
      help: 'Treasury transfers left unmined and signed again at the same nonce with higher fees',
      registers: [registry],
    }),
    treasuryInsufficientFunds: new Counter({
      name: 'payout_treasury_insufficient_funds_total',
      help: 'Treasury transfer attempts refused for lack of USDT or gas in the treasury (retried until topped up)',
      registers: [registry],
    }),
    screeningRefusals: new Counter({
      name: 'payout_screening_refusals_total',
      help: 'POST /v1/payouts refused because screening flagged the receiver, by source',
      labelNames: ['source'],
      registers: [registry],
    }),
    screeningUnavailable: new Counter({
      name: 'payout_screening_unavailable_total',
      help: 'POST /v1/payouts answered 503 because a screening source could not be read',
      registers: [registry],
    }),
    treasuryCannotSend: new Counter({
      name: 'payout_treasury_cannot_send_total',
      help: 'Treasury transfers refused before signing or mined and reverted because the treasury cannot send (blocked_by_issuer, cannot_send); the payouts wait until it can',
      labelNames: ['reason'],
      registers: [registry],
    }),
    treasuryNonceGaps: new Counter({
      name: 'payout_treasury_nonce_gaps_total',
      help: 'Checks of an unmined treasury transfer that found it queued behind a nonce gap: nonces below it that no transaction the node holds fills',
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
