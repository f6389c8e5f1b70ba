DROP INDEX api_keys_plan_id ON api_keys;
