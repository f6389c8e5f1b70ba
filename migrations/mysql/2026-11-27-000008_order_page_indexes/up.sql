-- Kept in lockstep with migrations/postgres.
CREATE INDEX orders_status_id ON orders (status, id);
CREATE INDEX orders_owner_status_id ON orders (owner_key_id, status, id);
