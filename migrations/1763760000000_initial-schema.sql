-- Up Migration

CREATE TABLE partners (
  id              uuid PRIMARY KEY,
  name            text NOT NULL,
  status          text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  callback_url    text,
  callback_secret text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);

-- Only a SHA-256 of each key is stored; the key itself is shown once by the admin CLI.
CREATE TABLE api_keys (
  key_hash    bytea PRIMARY KEY,
  partner_id  uuid NOT NULL REFERENCES partners (id),
  key_prefix  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX api_keys_partner_idx ON api_keys (partner_id);

-- Read model of payouts: written by the payout workflow on every transition (version guards
-- against an older write landing after a newer one), read by GET when the workflow cannot answer.
CREATE TABLE payouts (
  id                        uuid PRIMARY KEY,
  partner_id                uuid NOT NULL REFERENCES partners (id),
  workflow_id               text NOT NULL,
  run_id                    text NOT NULL,
  version                   integer NOT NULL,
  status                    text NOT NULL CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
  amount_centavos           bigint NOT NULL CHECK (amount_centavos > 0),
  min_amount_usdt_units     bigint NOT NULL,
  settled_amount_usdt_units bigint NOT NULL DEFAULT 0,
  pix_key                   text NOT NULL,
  pix_key_type              text NOT NULL,
  receiver_wallet           text NOT NULL,
  pix_copy_paste            text NOT NULL DEFAULT '',
  provider_charge_id        text,
  blockchain_tx_id          text NOT NULL DEFAULT '',
  paid_at                   timestamptz,
  confirmed_at              timestamptz,
  failure_reason            text,
  created_at                timestamptz NOT NULL,
  updated_at                timestamptz NOT NULL
);
CREATE INDEX payouts_partner_created_idx ON payouts (partner_id, created_at DESC);
CREATE INDEX payouts_status_idx ON payouts (status) WHERE status IN ('PENDING', 'PROCESSING');

-- Idempotency-Key -> payout, scoped per partner, valid 24 h from first use. Kept here rather than
-- only in Temporal so the mapping outlives workflow retention.
CREATE TABLE idempotency_keys (
  partner_id   uuid NOT NULL REFERENCES partners (id),
  key          text NOT NULL,
  payout_id    uuid NOT NULL,
  workflow_id  text NOT NULL,
  state        text NOT NULL CHECK (state IN ('claimed', 'recorded')),
  claimed_at   timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  PRIMARY KEY (partner_id, key)
);

-- De-duplication of provider webhook tokens (kept at least 90 days, docs/decisions.md D21).
CREATE TABLE webhook_tokens (
  provider     text NOT NULL,
  token        text NOT NULL,
  received_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (provider, token)
);
CREATE INDEX webhook_tokens_received_idx ON webhook_tokens (received_at);

-- Token buckets shared by every api replica.
CREATE TABLE rate_limit_buckets (
  bucket       text PRIMARY KEY,
  tokens       double precision NOT NULL,
  refilled_at  timestamptz NOT NULL
);

-- Takes one token from a bucket in one atomic statement; true when the request may go on.
CREATE FUNCTION take_rate_limit_token(p_bucket text, p_capacity double precision, p_per_second double precision)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  available double precision;
BEGIN
  INSERT INTO rate_limit_buckets (bucket, tokens, refilled_at)
  VALUES (p_bucket, p_capacity, clock_timestamp())
  ON CONFLICT (bucket) DO NOTHING;

  SELECT LEAST(p_capacity, tokens + GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - refilled_at)) * p_per_second)
    INTO available
    FROM rate_limit_buckets WHERE bucket = p_bucket FOR UPDATE;

  IF available >= 1 THEN
    UPDATE rate_limit_buckets SET tokens = available - 1, refilled_at = clock_timestamp() WHERE bucket = p_bucket;
    RETURN true;
  END IF;
  UPDATE rate_limit_buckets SET tokens = available, refilled_at = clock_timestamp() WHERE bucket = p_bucket;
  RETURN false;
END;
$$;

-- Treasury-mode transfers: the signed transaction is stored before it is broadcast, so a retry or
-- a new worker re-sends exactly the same transaction and never signs a second one.
CREATE TABLE treasury_transfers (
  payout_id        uuid PRIMARY KEY,
  nonce            bigint NOT NULL UNIQUE,
  to_address       text NOT NULL,
  amount_units     bigint NOT NULL,
  raw_transaction  text NOT NULL,
  tx_hash          text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now()
);

-- PIX payments that arrived for a payout that can no longer be settled: money to give back.
CREATE TABLE refund_cases (
  event_id      text PRIMARY KEY,
  payout_id     uuid NOT NULL,
  charge_id     text NOT NULL,
  amount_brl    text NOT NULL,
  reason        text NOT NULL,
  status        text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'refunded')),
  created_at    timestamptz NOT NULL DEFAULT now()
);

-- Down Migration

DROP TABLE refund_cases;
DROP TABLE treasury_transfers;
DROP FUNCTION take_rate_limit_token(text, double precision, double precision);
DROP TABLE rate_limit_buckets;
DROP TABLE webhook_tokens;
DROP TABLE idempotency_keys;
DROP TABLE payouts;
DROP TABLE api_keys;
DROP TABLE partners;
