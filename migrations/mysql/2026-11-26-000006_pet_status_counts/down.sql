DROP TRIGGER pets_count_delete;
DROP TRIGGER pets_count_update;
DROP TRIGGER pets_count_insert;
DROP TABLE pet_status_counts;
