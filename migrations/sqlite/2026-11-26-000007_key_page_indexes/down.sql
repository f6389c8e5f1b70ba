DROP INDEX api_keys_expiring_plan_id;
DROP INDEX api_keys_expiring_id;
DROP INDEX api_keys_revoked_plan_id;
DROP INDEX api_keys_revoked_id;
DROP INDEX api_keys_plan_id;
