-- Up Migration

-- A treasury transfer mined and reverted because the treasury could not send (the token's issuer
-- blocked it, say) moved no USDT and used up its nonce: once the treasury can send again, the payout
-- sends again, at a new nonce. Each such try is a round of the payout's transfer; the reverted one is
-- closed (reverted_at) and kept, with its transactions, as the record of what was signed.
ALTER TABLE treasury_transfers ADD COLUMN round integer NOT NULL DEFAULT 0;
ALTER TABLE treasury_transfers ADD COLUMN reverted_at timestamptz;
ALTER TABLE treasury_transfer_attempts ADD COLUMN round integer NOT NULL DEFAULT 0;

ALTER TABLE treasury_transfer_attempts DROP CONSTRAINT treasury_transfer_attempts_payout_id_fkey;
ALTER TABLE treasury_transfer_attempts DROP CONSTRAINT treasury_transfer_attempts_pkey;
ALTER TABLE treasury_transfers DROP CONSTRAINT treasury_transfers_pkey;
ALTER TABLE treasury_transfers ADD CONSTRAINT treasury_transfers_pkey PRIMARY KEY (payout_id, round);
ALTER TABLE treasury_transfer_attempts
  ADD CONSTRAINT treasury_transfer_attempts_pkey PRIMARY KEY (payout_id, round, attempt);
ALTER TABLE treasury_transfer_attempts
  ADD CONSTRAINT treasury_transfer_attempts_round_fkey
  FOREIGN KEY (payout_id, round) REFERENCES treasury_transfers (payout_id, round);

-- Never two open rounds for a payout: a second transfer is signed only once the first is closed.
CREATE UNIQUE INDEX treasury_transfers_open_round ON treasury_transfers (payout_id) WHERE reverted_at IS NULL;

-- Down Migration

-- A payout with a second round cannot go back to one row per payout without losing what was signed.
DO $$
BEGIN
  -- A closed round 0 would look like the payout's only transfer again, and older code fails (and
  -- refunds) a payout whose only transfer reverted: the payout would no longer wait for the treasury.
  IF EXISTS (SELECT 1 FROM treasury_transfers WHERE round > 0 OR reverted_at IS NOT NULL) THEN
    RAISE EXCEPTION 'treasury_transfers holds closed or second rounds: cannot go back to one transfer per payout';
  END IF;
END $$;
DROP INDEX treasury_transfers_open_round;
ALTER TABLE treasury_transfer_attempts DROP CONSTRAINT treasury_transfer_attempts_round_fkey;
ALTER TABLE treasury_transfer_attempts DROP CONSTRAINT treasury_transfer_attempts_pkey;
ALTER TABLE treasury_transfers DROP CONSTRAINT treasury_transfers_pkey;
ALTER TABLE treasury_transfers ADD CONSTRAINT treasury_transfers_pkey PRIMARY KEY (payout_id);
ALTER TABLE treasury_transfer_attempts ADD CONSTRAINT treasury_transfer_attempts_pkey PRIMARY KEY (payout_id, attempt);
ALTER TABLE treasury_transfer_attempts
  ADD CONSTRAINT treasury_transfer_attempts_payout_id_fkey
  FOREIGN KEY (payout_id) REFERENCES treasury_transfers (payout_id);
ALTER TABLE treasury_transfer_attempts DROP COLUMN round;
ALTER TABLE treasury_transfers DROP COLUMN reverted_at;
ALTER TABLE treasury_transfers DROP COLUMN round;
