-- Kept in lockstep with migrations/sqlite and migrations/mysql.
-- Due deliveries are claimed oldest first, in id order among those due at the same second
-- (`ORDER BY next_attempt_at, id`). The index of due deliveries now holds that whole order, so
-- a claim reads only the rows it takes, where PostgreSQL read every delivery due at the oldest
-- second to sort them by id (5,000 after a burst of 5,000 events a second). The table is locked
-- first, whole: claims, the delivery log and the changes that record events wait for the
-- build (no lock is taken a step at a time, which a claim under way could deadlock with).
LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE;
CREATE INDEX webhook_deliveries_due_id ON webhook_deliveries (state, next_attempt_at, id);
DROP INDEX webhook_deliveries_due;
ALTER INDEX webhook_deliveries_due_id RENAME TO webhook_deliveries_due;
