-- Up Migration

-- What a payout is waiting on without proof (a transfer not yet confirmed past the deadline, a
-- status the provider does not answer, a mismatch on chain): one row per payout and kind, raised by
-- the payout's workflow and cleared by it when proof arrives. Rows still open are the
-- PayoutOutcomeUnknown alert, and `admin payouts attention` lists them by payout.
CREATE TABLE payout_attention (
  id bigserial PRIMARY KEY,
  payout_id uuid NOT NULL,
  kind text NOT NULL,
  detail text NOT NULL,
  raised_at timestamptz NOT NULL DEFAULT now(),
  cleared_at timestamptz,
  cleared_by text
);
-- At most one open row per payout and kind: raising again is a no-op.
CREATE UNIQUE INDEX payout_attention_open ON payout_attention (payout_id, kind) WHERE cleared_at IS NULL;
CREATE INDEX payout_attention_payout ON payout_attention (payout_id);

-- An operator's decision on a payout that waits without proof: who decided, what and why. Written
-- by the payout's workflow once it has accepted the decision, so a row is a decision that took effect.
CREATE TABLE operator_decisions (
  id bigserial PRIMARY KEY,
  payout_id uuid NOT NULL,
  decision text NOT NULL CHECK (decision IN ('fail', 'complete')),
  decided_by text NOT NULL,
  reason text NOT NULL,
  tx_hash text,
  amount_usdt_units numeric(78, 0),
  decided_at timestamptz NOT NULL DEFAULT now(),
  -- One decision per payout: the workflow ends on it.
  UNIQUE (payout_id)
);

-- Down Migration

DROP TABLE operator_decisions;
DROP TABLE payout_attention;
