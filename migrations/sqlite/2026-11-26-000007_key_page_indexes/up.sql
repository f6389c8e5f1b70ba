-- Kept in lockstep with migrations/postgres.
-- The admin API's pages of keys, each on an index of the keys it may show (of one plan; revoked;
-- not revoked with an expiry), so that a page of one plan, of revoked or of expired keys never
-- reads the others to skip them (`queries/keys.rs`, `list_page`). A page of active keys, most
-- keys, walks the primary key or `(plan, id)` and skips what is not active. These indexes
-- change only when a key is created, revoked or given another plan or expiry: a key's use
-- (`last_used_at`) changes none of them.
CREATE INDEX api_keys_plan_id ON api_keys (plan, id);
CREATE INDEX api_keys_revoked_id ON api_keys (id) WHERE revoked_at IS NOT NULL;
CREATE INDEX api_keys_revoked_plan_id ON api_keys (plan, id) WHERE revoked_at IS NOT NULL;
CREATE INDEX api_keys_expiring_id ON api_keys (id)
    WHERE revoked_at IS NULL AND expires_at IS NOT NULL;
CREATE INDEX api_keys_expiring_plan_id ON api_keys (plan, id)
    WHERE revoked_at IS NULL AND expires_at IS NOT NULL;
