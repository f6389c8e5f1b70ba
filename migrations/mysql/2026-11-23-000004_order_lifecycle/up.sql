-- Kept in lockstep with migrations/postgres.
-- Orders get an owner (the API key that placed them; NULL: placed outside the API) and can be
-- cancelled.
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check
    CHECK (status IN ('placed', 'approved', 'delivered', 'cancelled'));
ALTER TABLE orders ADD COLUMN owner_key_id BIGINT;
ALTER TABLE orders ADD CONSTRAINT orders_owner_key_id_fkey
    FOREIGN KEY (owner_key_id) REFERENCES api_keys (id);
-- A key's orders, in id order (its listing).
CREATE INDEX orders_owner_id ON orders (owner_key_id, id);
