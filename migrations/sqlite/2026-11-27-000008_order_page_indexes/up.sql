-- Kept in lockstep with migrations/postgres.
-- The admin API's pages of orders, each on an index of the orders it shows: of one status
-- `(status, id)`, of one key and one status `(owner_key_id, status, id)` (a key's pages of
-- every status walk `orders_owner_id`), so that no page reads the orders it does not show to
-- skip them (`queries/orders.rs`, `list`). They change when an order is placed or changes
-- status.
CREATE INDEX orders_status_id ON orders (status, id);
CREATE INDEX orders_owner_status_id ON orders (owner_key_id, status, id);
