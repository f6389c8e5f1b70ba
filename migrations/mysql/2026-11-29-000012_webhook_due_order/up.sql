-- Kept in lockstep with migrations/postgres and migrations/sqlite.
-- Due deliveries are claimed oldest first, in id order among those due at the same second
-- (`ORDER BY next_attempt_at, id`): the index of due deliveries now names that whole order.
-- (InnoDB's secondary indexes already end with the primary key, the id; PostgreSQL's did not.)
-- Changed in place: writes go on meanwhile.
ALTER TABLE webhook_deliveries
    DROP INDEX webhook_deliveries_due,
    ADD INDEX webhook_deliveries_due (state, next_attempt_at, id);
