-- Up Migration

-- A payout whose treasury rounds are closed for good: the payout is ending FAILED (a refusal, a flag,
-- a revert, an operator's decision) and nothing was signed for it that may still land. Written under
-- the treasury's nonce lock, the same lock every signing takes, and read there: an attempt still
-- running from before (a worker that timed out and went on) can no longer sign a transfer for a payout
-- that has failed. A payout with a transfer signed and not reverted is never closed.
CREATE TABLE treasury_closed_payouts (
  payout_id  uuid PRIMARY KEY,
  closed_at  timestamptz NOT NULL DEFAULT now()
);

-- Down Migration

DROP TABLE treasury_closed_payouts;
