LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE;
CREATE INDEX webhook_deliveries_due_at ON webhook_deliveries (state, next_attempt_at);
DROP INDEX webhook_deliveries_due;
ALTER INDEX webhook_deliveries_due_at RENAME TO webhook_deliveries_due;
