-- Kept in lockstep with migrations/postgres.
-- Admin tokens: what operators' tooling authenticates with on the admin listener. Only the
-- SHA-256 of a token is stored, with a short prefix to recognise it in listings.
CREATE TABLE admin_tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    display_prefix TEXT NOT NULL,
    label TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
