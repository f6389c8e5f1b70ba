-- Kept in lockstep with migrations/postgres.
-- Key lifecycle: expiry, scope, last use, and rotation: the previous secret's hash, working
-- until `previous_secret_until`.
ALTER TABLE api_keys ADD COLUMN expires_at BIGINT;
ALTER TABLE api_keys ADD COLUMN scope VARCHAR(16) NOT NULL DEFAULT 'read-write'
    CHECK (scope IN ('read-write', 'read-only'));
ALTER TABLE api_keys ADD COLUMN last_used_at BIGINT;
ALTER TABLE api_keys ADD COLUMN previous_key_hash VARCHAR(128);
ALTER TABLE api_keys ADD COLUMN previous_secret_until BIGINT;
CREATE UNIQUE INDEX api_keys_previous_key_hash ON api_keys (previous_key_hash);

-- Idempotency-Key records, scoped to the API key that sent them.
CREATE TABLE idempotency_keys (
    owner_key_id BIGINT NOT NULL,
    -- Bytes, not text: even `utf8mb4_bin` pads, so "k" and "k " would be one key.
    idempotency_key VARBINARY(255) NOT NULL,
    fingerprint VARCHAR(128) NOT NULL,
    token BIGINT NOT NULL,
    state VARCHAR(16) NOT NULL CHECK (state IN ('in_flight', 'completed')),
    claimed_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    response_status INTEGER,
    response_location TEXT,
    response_body MEDIUMTEXT,
    PRIMARY KEY (owner_key_id, idempotency_key),
    CONSTRAINT idempotency_keys_owner_fkey FOREIGN KEY (owner_key_id) REFERENCES api_keys (id),
    -- Pruning deletes by age.
    INDEX idempotency_keys_created_at (created_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
