-- Up Migration

-- The operators' denylist of receiver wallets (`admin screening deny|allow|list`): a wallet here is
-- refused at POST and not paid by a payout that reaches settlement (docs/decisions.md D36).
CREATE TABLE screening_denylist (
  wallet text PRIMARY KEY CHECK (wallet ~ '^0x[0-9a-f]{40}$'),
  reason text NOT NULL,
  added_by text NOT NULL,
  added_at timestamptz NOT NULL DEFAULT now()
);

-- Every change to the denylist, who made it and why: the list above is only its present state.
CREATE TABLE screening_denylist_changes (
  id bigserial PRIMARY KEY,
  wallet text NOT NULL,
  action text NOT NULL CHECK (action IN ('deny', 'allow')),
  changed_by text NOT NULL,
  reason text NOT NULL,
  changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX screening_denylist_changes_wallet ON screening_denylist_changes (wallet, changed_at);

-- A POST refused by screening keeps its Idempotency-Key, so a replay gets the same 422: `refusal`
-- names which refusal it was.
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_state_check;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_state_check
  CHECK (state IN ('claimed', 'recorded', 'refused'));
ALTER TABLE idempotency_keys ADD COLUMN refusal text;

-- A flagged receiver is decided by an operator (refund the payer, or release the payout), and a
-- released payout may later wait on another unknown and be decided again: one row per payout and
-- decision, a retry of the same one keeps the first.
ALTER TABLE operator_decisions DROP CONSTRAINT operator_decisions_decision_check;
ALTER TABLE operator_decisions ADD CONSTRAINT operator_decisions_decision_check
  CHECK (decision IN ('fail', 'complete', 'refund', 'release'));
ALTER TABLE operator_decisions DROP CONSTRAINT operator_decisions_payout_id_key;
ALTER TABLE operator_decisions ADD CONSTRAINT operator_decisions_payout_decision UNIQUE (payout_id, decision);

-- Down Migration

-- The decisions and the denylist's history are compliance records: never dropped by a rollback.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM operator_decisions WHERE decision IN ('refund', 'release'))
     OR EXISTS (SELECT 1 FROM screening_denylist_changes) THEN
    RAISE EXCEPTION 'screening records exist (refund/release decisions, denylist changes): archive them before migrating down';
  END IF;
END $$;

ALTER TABLE operator_decisions DROP CONSTRAINT operator_decisions_payout_decision;
ALTER TABLE operator_decisions ADD CONSTRAINT operator_decisions_payout_id_key UNIQUE (payout_id);
ALTER TABLE operator_decisions DROP CONSTRAINT operator_decisions_decision_check;
ALTER TABLE operator_decisions ADD CONSTRAINT operator_decisions_decision_check
  CHECK (decision IN ('fail', 'complete'));
DELETE FROM idempotency_keys WHERE state = 'refused';
ALTER TABLE idempotency_keys DROP COLUMN refusal;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_state_check;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_state_check CHECK (state IN ('claimed', 'recorded'));
DROP TABLE screening_denylist_changes;
DROP TABLE screening_denylist;
