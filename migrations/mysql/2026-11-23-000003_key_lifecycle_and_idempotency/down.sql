DROP TABLE idempotency_keys;
DROP INDEX api_keys_previous_key_hash ON api_keys;
ALTER TABLE api_keys DROP COLUMN previous_secret_until;
ALTER TABLE api_keys DROP COLUMN previous_key_hash;
ALTER TABLE api_keys DROP COLUMN last_used_at;
ALTER TABLE api_keys DROP COLUMN scope;
ALTER TABLE api_keys DROP COLUMN expires_at;
