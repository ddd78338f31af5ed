-- Up Migration

-- A provider-mode payout whose settlement request was sent: written right before the request leaves
-- (after its screening), so that a run of the payout that knows nothing of it (an operator's reset to
-- before the request) learns that the provider may be settling, and follows that settlement instead of
-- deciding the payout anew. settlement_id: the provider's id, once an answer gave it.
CREATE TABLE settlement_requests_sent (
  payout_id      uuid PRIMARY KEY,
  first_sent_at  timestamptz NOT NULL DEFAULT now(),
  settlement_id  text
);

-- Down Migration

DROP TABLE settlement_requests_sent;
