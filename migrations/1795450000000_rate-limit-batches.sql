-- Up Migration

-- Takes up to p_wanted tokens from a bucket in one atomic statement and answers how many it got
-- (0 when the bucket is empty). An api replica takes a small batch at once under a high limit, so a
-- partner's requests do not each write the same bucket row (docs/decisions.md D76).
CREATE FUNCTION take_rate_limit_tokens(
  p_bucket text, p_capacity double precision, p_per_second double precision, p_wanted integer
) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  available double precision;
  granted integer;
BEGIN
  INSERT INTO rate_limit_buckets (bucket, tokens, refilled_at)
  VALUES (p_bucket, p_capacity, clock_timestamp())
  ON CONFLICT (bucket) DO NOTHING;

  SELECT LEAST(p_capacity, tokens + GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - refilled_at)) * p_per_second)
    INTO available
    FROM rate_limit_buckets WHERE bucket = p_bucket FOR UPDATE;
  -- The row removed by hand between the insert and this read: nothing is given out without a bucket.
  IF NOT FOUND THEN
    RETURN 0;
  END IF;

  granted := LEAST(GREATEST(p_wanted, 1), FLOOR(available))::integer;
  UPDATE rate_limit_buckets SET tokens = available - granted, refilled_at = clock_timestamp() WHERE bucket = p_bucket;
  RETURN granted;
END;
$$;

-- Down Migration

DROP FUNCTION take_rate_limit_tokens(text, double precision, double precision, integer);
