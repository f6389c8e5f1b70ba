ALTER TABLE webhook_deliveries
    DROP INDEX webhook_deliveries_due,
    ADD INDEX webhook_deliveries_due (state, next_attempt_at);
