-- Up Migration

-- Nonces belong to one account on one chain: allocate them per (chain, treasury address), so a
-- second treasury key or chain never skips numbers that the other one used.
ALTER TABLE treasury_transfers
  ADD COLUMN chain_id integer NOT NULL DEFAULT 42161,
  ADD COLUMN from_address text NOT NULL DEFAULT '';
ALTER TABLE treasury_transfers ALTER COLUMN chain_id DROP DEFAULT;
ALTER TABLE treasury_transfers ALTER COLUMN from_address DROP DEFAULT;
ALTER TABLE treasury_transfers DROP CONSTRAINT treasury_transfers_nonce_key;
ALTER TABLE treasury_transfers ADD CONSTRAINT treasury_transfers_account_nonce_key UNIQUE (chain_id, from_address, nonce);

-- Down Migration

ALTER TABLE treasury_transfers DROP CONSTRAINT treasury_transfers_account_nonce_key;
ALTER TABLE treasury_transfers ADD CONSTRAINT treasury_transfers_nonce_key UNIQUE (nonce);
ALTER TABLE treasury_transfers DROP COLUMN from_address, DROP COLUMN chain_id;
