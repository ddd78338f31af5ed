-- Up Migration

-- An Idempotency-Key claim is a short lease with a fencing token (docs/decisions.md D73). The request
-- holding the claim renews `lease_until` (the database's clock) while it is in flight; once it has
-- passed, the request is taken to have died and the next request with the key takes the claim over.
-- Every claim and takeover writes a new `claim_token`, and a holder's renewal and final writes
-- (recorded, refused, released) apply only while the token is still its own.
--
-- Rows written before this migration, or by an api of the previous version still running during a
-- deploy, have neither: such a claim is stale 60 s after `claimed_at`, as before, and its takeover
-- gives it a token and a lease.
ALTER TABLE idempotency_keys
  ADD COLUMN claim_token uuid,
  ADD COLUMN lease_until timestamptz;

-- Down Migration

-- The previous code reads claimed_at alone (stale after 60 s) and never writes these columns.
ALTER TABLE idempotency_keys
  DROP COLUMN lease_until,
  DROP COLUMN claim_token;
