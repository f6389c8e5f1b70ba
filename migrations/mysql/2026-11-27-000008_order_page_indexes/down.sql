DROP INDEX orders_owner_status_id ON orders;
DROP INDEX orders_status_id ON orders;
