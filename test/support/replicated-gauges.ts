/**
 * Gauges that every replica reports with the same value: the read model's (each api replica reads
 * PostgreSQL) and the treasury's (each worker replica reads the chain). Alerts and dashboards take
 * their max or min across replicas; a sum would count each payout once per replica.
 */
export const REPLICATED_GAUGES = [
  'payouts_open',
  'payouts_open_oldest_age_seconds',
  'payouts_awaiting_attention',
  'partner_callback_events',
  'payout_refund_cases',
  'payout_refund_case_oldest_seconds',
  'treasury_usdt_balance',
  'treasury_can_send',
];
