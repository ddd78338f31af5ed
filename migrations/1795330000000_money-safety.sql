-- Up Migration

-- Refund cases: every BRL received and not settled. Operators resolve them (after refunding the
-- payer, or deciding otherwise) with a note; a case is never deleted.
ALTER TABLE refund_cases
  ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
  ADD COLUMN resolved_at timestamptz,
  ADD COLUMN resolution_note text;
ALTER TABLE refund_cases DROP CONSTRAINT refund_cases_status_check;
UPDATE refund_cases SET status = 'resolved', resolved_at = now(), resolution_note = 'refunded before resolution notes existed'
  WHERE status = 'refunded';
ALTER TABLE refund_cases ADD CONSTRAINT refund_cases_status_check CHECK (status IN ('open', 'resolved'));
ALTER TABLE refund_cases ADD CONSTRAINT refund_cases_resolution_check
  CHECK ((status = 'open') = (resolved_at IS NULL) AND (status = 'open') = (resolution_note IS NULL));
CREATE INDEX refund_cases_open_idx ON refund_cases (created_at) WHERE status = 'open';

-- The PIX payment (provider event id) a payout settles. A redelivery of that event under another
-- token must be recognised as the same payment, not taken for a second one to refund.
ALTER TABLE payouts ADD COLUMN payment_event_id text;
CREATE UNIQUE INDEX payouts_payment_event_idx ON payouts (payment_event_id);

-- One on-chain USDT transfer settles at most one payout: a transfer is claimed by its payout
-- before that payout is COMPLETED, and a second payout reporting the same transfer is refused.
CREATE TABLE settlement_transfer_claims (
  chain_id    integer NOT NULL,
  tx_hash     text NOT NULL,
  log_index   integer NOT NULL,
  payout_id   uuid NOT NULL,
  claimed_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (chain_id, tx_hash, log_index)
);
CREATE INDEX settlement_transfer_claims_payout_idx ON settlement_transfer_claims (payout_id);

-- Down Migration

DROP TABLE settlement_transfer_claims;
DROP INDEX payouts_payment_event_idx;
ALTER TABLE payouts DROP COLUMN payment_event_id;
DROP INDEX refund_cases_open_idx;
ALTER TABLE refund_cases DROP CONSTRAINT refund_cases_resolution_check;
ALTER TABLE refund_cases DROP CONSTRAINT refund_cases_status_check;
UPDATE refund_cases SET status = 'refunded' WHERE status = 'resolved';
ALTER TABLE refund_cases ADD CONSTRAINT refund_cases_status_check CHECK (status IN ('open', 'refunded'));
ALTER TABLE refund_cases DROP COLUMN resolution_note, DROP COLUMN resolved_at, DROP COLUMN id;
