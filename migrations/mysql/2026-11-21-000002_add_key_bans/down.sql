ALTER TABLE api_keys DROP COLUMN ban_level;
ALTER TABLE api_keys DROP COLUMN banned_until;
