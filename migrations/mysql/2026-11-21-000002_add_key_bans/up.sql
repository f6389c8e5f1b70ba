-- A key's temporary ban (rate-limit abuse): the end of the current or last ban, and how many
-- bans in a row it has had (for escalation). NULL: never banned, or the ban was lifted.
ALTER TABLE api_keys ADD COLUMN banned_until BIGINT;
ALTER TABLE api_keys ADD COLUMN ban_level INTEGER NOT NULL DEFAULT 0;
