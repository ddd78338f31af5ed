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

-- An api of the previous version knows neither column. Its takeover of a stale claim (and its new
-- claim of an expired key) sets `claimed_at` alone, which would leave the previous holder's token
-- (still able to write) and its lapsed lease (stale at once for the next new api, which would take the
-- claim over from under the old api's request). The api of this version changes `claimed_at` only with
-- a new token; a change of `claimed_at` under the same token is the previous version's, and makes the
-- row a claim without a lease or a token: the 60 s rule for everyone, the previous holder fenced out.
CREATE FUNCTION idempotency_keys_unleased_claim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.claim_token := NULL;
  NEW.lease_until := NULL;
  RETURN NEW;
END;
$$;

CREATE TRIGGER idempotency_keys_unleased_claim
  BEFORE UPDATE ON idempotency_keys
  FOR EACH ROW
  WHEN (NEW.claimed_at IS DISTINCT FROM OLD.claimed_at AND NEW.claim_token IS NOT DISTINCT FROM OLD.claim_token)
  EXECUTE FUNCTION idempotency_keys_unleased_claim();

-- An api of the previous version releases a key by payout id alone. A claim with a token is one that
-- an api of this version holds (it took the key over from that older request, 60 s after its claim):
-- deleting it would free the key for a new payout under a new workflow id while its holder may be
-- starting this one. Such a claim is deleted only in a transaction that names its token
-- (`set_config('idempotency.claim_token', <token>, true)`, as releaseIdempotencyKey does); any other
-- delete of it is skipped, as a fenced-out holder's release is. Recorded and refused keys, and claims
-- without a token, are deleted as before. By hand: set the token first, or clear claim_token.
CREATE FUNCTION idempotency_keys_fenced_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RETURN NULL;
END;
$$;

CREATE TRIGGER idempotency_keys_fenced_delete
  BEFORE DELETE ON idempotency_keys
  FOR EACH ROW
  WHEN (OLD.state = 'claimed' AND OLD.claim_token IS NOT NULL
        AND current_setting('idempotency.claim_token', true) IS DISTINCT FROM OLD.claim_token::text)
  EXECUTE FUNCTION idempotency_keys_fenced_delete();

-- Down Migration

-- The previous code reads claimed_at alone (stale after 60 s) and never writes these columns.
DROP TRIGGER idempotency_keys_fenced_delete ON idempotency_keys;
DROP FUNCTION idempotency_keys_fenced_delete();
DROP TRIGGER idempotency_keys_unleased_claim ON idempotency_keys;
DROP FUNCTION idempotency_keys_unleased_claim();
ALTER TABLE idempotency_keys
  DROP COLUMN lease_until,
  DROP COLUMN claim_token;
