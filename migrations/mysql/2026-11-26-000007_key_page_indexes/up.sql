-- Kept in lockstep with migrations/postgres, as far as MariaDB and MySQL go: they have no
-- partial indexes, so a page of one plan walks `(plan, id)`, and a page of revoked or of expired
-- keys walks the primary key and skips the others.
CREATE INDEX api_keys_plan_id ON api_keys (plan, id);
