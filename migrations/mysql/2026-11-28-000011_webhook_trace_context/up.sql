-- Kept in lockstep with migrations/sqlite and migrations/postgres.
-- The trace the change that recorded a delivery was made in (W3C `traceparent`, version 00),
-- when traces are exported: each attempt's span links back to it. NULL: none.
ALTER TABLE webhook_deliveries ADD COLUMN trace_context VARCHAR(55) NULL;
