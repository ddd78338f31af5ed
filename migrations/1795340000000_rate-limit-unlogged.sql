-- Up Migration

-- Rate-limit buckets hold nothing worth a WAL record: after a crash (or on a promoted standby, which
-- never receives unlogged tables) every bucket starts full again, which is harmless. Unlogged, a
-- token taken commits without waiting for a WAL flush, so concurrent requests of one partner, which
-- all update the same bucket row, no longer queue behind each other's disk sync.
ALTER TABLE rate_limit_buckets SET UNLOGGED;

-- Down Migration

ALTER TABLE rate_limit_buckets SET LOGGED;
