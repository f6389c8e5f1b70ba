-- Kept in lockstep with migrations/postgres and migrations/sqlite (see there).
CREATE TABLE webhook_endpoints (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    owner_key_id BIGINT NOT NULL,
    url TEXT NOT NULL,
    events VARCHAR(255) NOT NULL,
    description TEXT NOT NULL,
    secret VARCHAR(128) NOT NULL,
    previous_secret VARCHAR(128),
    previous_secret_until BIGINT,
    enabled BOOLEAN NOT NULL,
    disabled_reason TEXT,
    deleted_at BIGINT,
    created_at BIGINT NOT NULL,
    INDEX webhook_endpoints_owner_id (owner_key_id, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE webhook_deliveries (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    endpoint_id BIGINT NOT NULL,
    event_id VARCHAR(64) NOT NULL,
    event_type VARCHAR(32) NOT NULL,
    body MEDIUMTEXT NOT NULL,
    state VARCHAR(16) NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL,
    tries INTEGER NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    lease_token BIGINT NOT NULL,
    lease_until BIGINT NOT NULL,
    last_status INTEGER,
    last_latency_ms INTEGER,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    ended_at BIGINT,
    INDEX webhook_deliveries_due (state, next_attempt_at),
    INDEX webhook_deliveries_endpoint_id (endpoint_id, id),
    -- Every delivery, ended or not (MariaDB has no partial index).
    INDEX webhook_deliveries_ended (ended_at),
    CONSTRAINT webhook_deliveries_endpoint_fkey FOREIGN KEY (endpoint_id)
        REFERENCES webhook_endpoints (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE webhook_attempts (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    delivery_id BIGINT NOT NULL,
    attempted_at BIGINT NOT NULL,
    status INTEGER,
    latency_ms INTEGER NOT NULL,
    error TEXT,
    INDEX webhook_attempts_delivery_id (delivery_id, id),
    CONSTRAINT webhook_attempts_delivery_fkey FOREIGN KEY (delivery_id)
        REFERENCES webhook_deliveries (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
