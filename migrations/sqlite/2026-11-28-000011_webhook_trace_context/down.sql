ALTER TABLE webhook_deliveries DROP COLUMN trace_context;
