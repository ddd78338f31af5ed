-- Up Migration

-- A treasury transfer's attempt that cancels it: a transaction from the treasury to itself, no value,
-- at the transfer's nonce with higher fees, signed when the receiver was flagged while the transfer
-- waited unmined. Whichever of the round's transactions is mined decides: the transfer (the receiver
-- was paid) or the cancel (nothing moved, the payout fails and its payer is refunded).
ALTER TABLE treasury_transfer_attempts ADD COLUMN cancels boolean NOT NULL DEFAULT false;

-- Down Migration

ALTER TABLE treasury_transfer_attempts DROP COLUMN cancels;
