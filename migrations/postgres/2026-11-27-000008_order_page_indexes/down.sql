DROP INDEX orders_owner_status_id;
DROP INDEX orders_status_id;
