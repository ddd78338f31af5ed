-- Up Migration

-- Rotation with overlap (docs/operations.md "Rotating a partner's credentials"). An API key's
-- revoked_at may now lie in the future: the key is valid until then, beside its successor, and
-- refused from then on without anything having to run at that moment.
COMMENT ON COLUMN api_keys.revoked_at IS
  'the key is refused from this instant on; in the future during a rotation''s overlap';

-- The callback secret being replaced, sealed like callback_secret, and until when callbacks are
-- signed with it too (Standard Webhooks: several signatures, one matching is enough).
ALTER TABLE partners ADD COLUMN callback_previous_secret text;
ALTER TABLE partners ADD COLUMN callback_previous_secret_until timestamptz;
ALTER TABLE partners ADD CONSTRAINT partners_callback_previous_secret_pair
  CHECK ((callback_previous_secret IS NULL) = (callback_previous_secret_until IS NULL));

-- Down Migration

-- Older code reads revoked_at as "revoked when set": a key in its overlap would be refused at once,
-- so the down migration ends every overlap now (the partner then has only the new key).
UPDATE api_keys SET revoked_at = now() WHERE revoked_at > now();
ALTER TABLE partners DROP CONSTRAINT partners_callback_previous_secret_pair;
ALTER TABLE partners DROP COLUMN callback_previous_secret_until;
ALTER TABLE partners DROP COLUMN callback_previous_secret;
COMMENT ON COLUMN api_keys.revoked_at IS NULL;
