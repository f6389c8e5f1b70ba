-- Kept in lockstep with migrations/postgres.
-- Orders get an owner (the API key that placed them; NULL: placed outside the API) and can be
-- cancelled. SQLite cannot change a CHECK constraint: the table is rebuilt, ids kept.
CREATE TABLE orders_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    pet_id BIGINT NOT NULL REFERENCES pets (id),
    quantity INTEGER NOT NULL CHECK (quantity >= 1),
    status TEXT NOT NULL CHECK (status IN ('placed', 'approved', 'delivered', 'cancelled')),
    created_at BIGINT NOT NULL,
    owner_key_id BIGINT REFERENCES api_keys (id)
);
INSERT INTO orders_new (id, pet_id, quantity, status, created_at)
    SELECT id, pet_id, quantity, status, created_at FROM orders;
DROP TABLE orders;
ALTER TABLE orders_new RENAME TO orders;
-- A key's orders, in id order (its listing).
CREATE INDEX orders_owner_id ON orders (owner_key_id, id);
