-- Up Migration

-- GET /v1/payouts pages a partner's payouts newest first with a keyset cursor (created_at, id):
-- the id breaks ties between payouts created in the same microsecond, so the order is total and a
-- page boundary never drops or repeats a row. The second index serves the status filter the same way.
-- The old (partner_id, created_at DESC) index is a prefix of the first and goes.
CREATE INDEX payouts_partner_keyset_idx ON payouts (partner_id, created_at DESC, id DESC);
CREATE INDEX payouts_partner_status_keyset_idx ON payouts (partner_id, status, created_at DESC, id DESC);
DROP INDEX payouts_partner_created_idx;

-- Down Migration

CREATE INDEX payouts_partner_created_idx ON payouts (partner_id, created_at DESC);
DROP INDEX payouts_partner_status_keyset_idx;
DROP INDEX payouts_partner_keyset_idx;
