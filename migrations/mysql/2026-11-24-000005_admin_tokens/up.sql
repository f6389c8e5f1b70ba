-- Kept in lockstep with migrations/postgres.
CREATE TABLE admin_tokens (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    token_hash VARCHAR(128) NOT NULL UNIQUE,
    display_prefix VARCHAR(64) NOT NULL,
    label TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
