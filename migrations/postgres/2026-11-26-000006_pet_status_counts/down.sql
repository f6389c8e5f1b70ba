DROP TRIGGER pets_count_delete ON pets;
DROP TRIGGER pets_count_update ON pets;
DROP TRIGGER pets_count_insert ON pets;
DROP FUNCTION pets_count_statuses();
DROP TABLE pet_status_counts;
