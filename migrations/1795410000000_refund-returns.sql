-- Up Migration

-- Refund cases returned through the provider (D62-D64). A case is `open` until its refund workflow
-- applies the policy: `awaiting_approval` (an operator's `admin refunds approve`) or `returning` (the
-- provider was asked); the provider's answer makes it `returned` or `refused`. `resolved` stays the
-- operator's hand resolution. `kind` is the refund kind the policy decides by (null for cases opened
-- before it was kept: they wait for an operator).
ALTER TABLE refund_cases DROP CONSTRAINT refund_cases_resolution_check;
ALTER TABLE refund_cases DROP CONSTRAINT refund_cases_status_check;
ALTER TABLE refund_cases ADD CONSTRAINT refund_cases_status_check
  CHECK (status IN ('open', 'awaiting_approval', 'returning', 'returned', 'refused', 'resolved'));
ALTER TABLE refund_cases ADD CONSTRAINT refund_cases_resolution_check
  CHECK ((status = 'resolved') = (resolved_at IS NOT NULL)
     AND (status = 'resolved') = (resolution_note IS NOT NULL));
ALTER TABLE refund_cases
  ADD COLUMN kind text,
  ADD COLUMN return_id text,
  ADD COLUMN refusal_reason text,
  ADD COLUMN approved_by text,
  ADD COLUMN status_changed_at timestamptz NOT NULL DEFAULT now();

-- Every change of a case's status, with its time: what `admin refunds list --all` shows as `changes`.
CREATE TABLE refund_case_changes (
  case_id     uuid NOT NULL REFERENCES refund_cases (id),
  status      text NOT NULL,
  changed_at  timestamptz NOT NULL DEFAULT now(),
  detail      text
);
CREATE INDEX refund_case_changes_case_idx ON refund_case_changes (case_id, changed_at);
INSERT INTO refund_case_changes (case_id, status, changed_at) SELECT id, 'open', created_at FROM refund_cases;
INSERT INTO refund_case_changes (case_id, status, changed_at, detail)
  SELECT id, 'resolved', resolved_at, resolution_note FROM refund_cases WHERE status = 'resolved';

-- The cases an operator follows: every one that is not finished.
DROP INDEX refund_cases_open_idx;
CREATE INDEX refund_cases_unfinished_idx ON refund_cases (created_at)
  WHERE status NOT IN ('returned', 'resolved');

-- Down Migration

DROP INDEX refund_cases_unfinished_idx;
CREATE INDEX refund_cases_open_idx ON refund_cases (created_at) WHERE status = 'open';
ALTER TABLE refund_cases DROP CONSTRAINT refund_cases_resolution_check;
ALTER TABLE refund_cases DROP CONSTRAINT refund_cases_status_check;
-- A returned case was resolved (by the provider); any other unfinished one is open again.
UPDATE refund_cases SET status = 'resolved', resolved_at = status_changed_at,
  resolution_note = 'returned through the provider' WHERE status = 'returned';
UPDATE refund_cases SET status = 'open' WHERE status IN ('awaiting_approval', 'returning', 'refused');
ALTER TABLE refund_cases ADD CONSTRAINT refund_cases_status_check CHECK (status IN ('open', 'resolved'));
ALTER TABLE refund_cases ADD CONSTRAINT refund_cases_resolution_check
  CHECK ((status = 'open') = (resolved_at IS NULL) AND (status = 'open') = (resolution_note IS NULL));
DROP TABLE refund_case_changes;
ALTER TABLE refund_cases
  DROP COLUMN status_changed_at,
  DROP COLUMN approved_by,
  DROP COLUMN refusal_reason,
  DROP COLUMN return_id,
  DROP COLUMN kind;
