-- Up Migration

-- Settlement reports (the provider says it sent USDT: settlement.completed) for a payout that had
-- already ended FAILED, or COMPLETED by another transaction: USDT may have reached the receiver while
-- the service thinks otherwise. One row per payout and transaction, however often the event is
-- redelivered or the activity retried, so the alert counts each once; the row stays as the record
-- that keeps the payout's refund cases from being returned (`admin refunds approve`, the refund
-- workflow's policy). payout_status is what the payout's workflow knew when the report came.
CREATE TABLE settlements_after_end (
  payout_id      uuid NOT NULL,
  tx_hash        text NOT NULL,
  amount_usdt    text NOT NULL,
  chain_id       integer NOT NULL,
  payout_status  text NOT NULL,
  event_id       text NOT NULL,
  reported_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (payout_id, tx_hash)
);

-- Down Migration

DROP TABLE settlements_after_end;
