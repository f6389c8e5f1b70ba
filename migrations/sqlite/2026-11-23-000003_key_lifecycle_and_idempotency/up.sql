-- Kept in lockstep with migrations/postgres.
-- Key lifecycle: expiry, scope, last use (written at most once a minute per instance), and
-- rotation: the previous secret's hash, working until `previous_secret_until`.
ALTER TABLE api_keys ADD COLUMN expires_at BIGINT;
ALTER TABLE api_keys ADD COLUMN scope TEXT NOT NULL DEFAULT 'read-write'
    CHECK (scope IN ('read-write', 'read-only'));
ALTER TABLE api_keys ADD COLUMN last_used_at BIGINT;
ALTER TABLE api_keys ADD COLUMN previous_key_hash TEXT;
ALTER TABLE api_keys ADD COLUMN previous_secret_until BIGINT;
CREATE UNIQUE INDEX api_keys_previous_key_hash ON api_keys (previous_key_hash);

-- Idempotency-Key records, scoped to the API key that sent them: the request's fingerprint,
-- the claim of the request running (`token`, `claimed_at`), then its response.
CREATE TABLE idempotency_keys (
    owner_key_id BIGINT NOT NULL REFERENCES api_keys (id),
    idempotency_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    token BIGINT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('in_flight', 'completed')),
    claimed_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    response_status INTEGER,
    response_location TEXT,
    response_body TEXT,
    PRIMARY KEY (owner_key_id, idempotency_key)
);
-- Pruning deletes by age.
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
