-- Kept in lockstep with migrations/sqlite and migrations/mysql.
-- Due deliveries are claimed oldest first, in id order among those due at the same second
-- (`ORDER BY next_attempt_at, id`). The index of due deliveries now holds that whole order, so
-- a claim reads only the rows it takes, where PostgreSQL read every delivery due at the oldest
-- second to sort them by id (5,000 after a burst of 5,000 events a second). The new index is
-- built first (the changes that record events wait for it; claims and the delivery log read
-- on), then takes the old one's place.
CREATE INDEX webhook_deliveries_due_id ON webhook_deliveries (state, next_attempt_at, id);
DROP INDEX webhook_deliveries_due;
ALTER INDEX webhook_deliveries_due_id RENAME TO webhook_deliveries_due;
