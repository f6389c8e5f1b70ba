ALTER TABLE orders DROP FOREIGN KEY orders_owner_key_id_fkey;
DROP INDEX orders_owner_id ON orders;
ALTER TABLE orders DROP COLUMN owner_key_id;
DELETE FROM orders WHERE status = 'cancelled';
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check
    CHECK (status IN ('placed', 'approved', 'delivered'));
