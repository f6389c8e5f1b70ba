DROP INDEX orders_owner_id;
ALTER TABLE orders DROP COLUMN owner_key_id;
DELETE FROM orders WHERE status = 'cancelled';
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check
    CHECK (status IN ('placed', 'approved', 'delivered'));
