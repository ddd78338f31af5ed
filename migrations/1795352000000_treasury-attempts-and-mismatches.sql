-- Up Migration

-- Every transaction ever signed for a treasury transfer's nonce: the first one and each fee-raised
-- replacement. Any of them may be the one mined, so each is stored (before it is broadcast) and each
-- is looked up when confirming; only one can ever land, since they share the nonce.
CREATE TABLE treasury_transfer_attempts (
  payout_id        uuid NOT NULL REFERENCES treasury_transfers (payout_id),
  attempt          integer NOT NULL,
  raw_transaction  text NOT NULL,
  tx_hash          text NOT NULL UNIQUE,
  signed_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (payout_id, attempt)
);
-- The transfers signed before this table existed: their only transaction is attempt 0.
INSERT INTO treasury_transfer_attempts (payout_id, attempt, raw_transaction, tx_hash, signed_at)
  SELECT payout_id, 0, raw_transaction, tx_hash, created_at FROM treasury_transfers;

-- Which of the attempts was mined (set when the transfer is seen confirmed or reverted): the hash
-- to look for on a block explorer, which may not be treasury_transfers.tx_hash (the first one).
ALTER TABLE treasury_transfers ADD COLUMN mined_tx_hash text;

-- Settlements whose mined transaction does not pay the payout (no matching USDT transfer, or every
-- matching one already settled other payouts). The payout waits in PROCESSING for an operator; a
-- row per payout and transaction makes the alert count each case once, not once per retry.
CREATE TABLE settlement_transfer_mismatches (
  payout_id      uuid NOT NULL,
  tx_hash        text NOT NULL,
  reason         text NOT NULL CHECK (reason IN ('no_matching_transfer', 'claimed_by_other')),
  detail         text NOT NULL,
  first_seen_at  timestamptz NOT NULL DEFAULT now(),
  last_seen_at   timestamptz NOT NULL DEFAULT now(),
  checks         integer NOT NULL DEFAULT 1,
  PRIMARY KEY (payout_id, tx_hash)
);

-- Down Migration

DROP TABLE settlement_transfer_mismatches;
ALTER TABLE treasury_transfers DROP COLUMN mined_tx_hash;
DROP TABLE treasury_transfer_attempts;
