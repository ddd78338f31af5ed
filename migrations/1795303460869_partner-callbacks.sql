-- Up Migration

-- Partner callbacks (docs/decisions.md D22): one row per event, whose id partners de-duplicate on.
-- pending: being delivered; delivered: a 2xx was received; gave_up: no 2xx within the retry window;
-- skipped: the partner had no callback configured when it was due.
CREATE TABLE callback_events (
  event_id    text PRIMARY KEY,
  partner_id  uuid NOT NULL REFERENCES partners (id),
  payout_id   uuid NOT NULL,
  event       text NOT NULL CHECK (event IN ('payout.completed', 'payout.failed')),
  state       text NOT NULL CHECK (state IN ('pending', 'delivered', 'gave_up', 'skipped')),
  attempts    integer NOT NULL DEFAULT 0,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX callback_events_partner_idx ON callback_events (partner_id, created_at DESC);

-- Every HTTP attempt, append-only: what the operator looks at when a partner says it heard nothing.
-- url is stored without its query string, which partners sometimes use for their own tokens.
CREATE TABLE callback_deliveries (
  id                bigserial PRIMARY KEY,
  event_id          text NOT NULL REFERENCES callback_events (event_id),
  attempt           integer NOT NULL CHECK (attempt >= 1),
  url               text NOT NULL,
  status_code       integer,
  error             text,
  response_excerpt  text,
  started_at        timestamptz NOT NULL,
  duration_ms       integer NOT NULL
);
CREATE INDEX callback_deliveries_event_idx ON callback_deliveries (event_id, id);

-- Down Migration

DROP TABLE callback_deliveries;
DROP TABLE callback_events;
