-- Kept in lockstep with migrations/postgres and migrations/mysql.
-- Due deliveries are claimed oldest first, in id order among those due at the same second
-- (`ORDER BY next_attempt_at, id`): the index of due deliveries now names that whole order.
-- (SQLite's index already ended with the rowid, the id, and its plans read no more than the
-- claim takes; PostgreSQL's did not.)
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at, id);
