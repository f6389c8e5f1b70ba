-- Kept in lockstep with migrations/postgres and migrations/mysql.
-- Webhooks: the endpoints keys (or, with no key, the operators) register, and the outbox of
-- deliveries written in the transaction of the change that produces each event (one row per
-- event and endpoint), with each delivery's attempts. The signing secret is stored as it is
-- used (HMAC needs the key itself): base64 of its bytes. An endpoint's owner is an API key's id,
-- or 0 for the operators' (which receive every event): one indexed column either way. Keys are
-- revoked, never deleted, so it has no foreign key. A deleted endpoint is marked (`deleted_at`,
-- and off), and its deliveries and then its row are removed in batches in the background, so
-- that a delete never waits on, nor fails, the writes that record events.
CREATE TABLE webhook_endpoints (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    owner_key_id BIGINT NOT NULL,
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    description TEXT NOT NULL,
    secret TEXT NOT NULL,
    previous_secret TEXT,
    previous_secret_until BIGINT,
    enabled BOOLEAN NOT NULL,
    disabled_reason TEXT,
    deleted_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX webhook_endpoints_owner_id ON webhook_endpoints (owner_key_id, id);

CREATE TABLE webhook_deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    endpoint_id BIGINT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL,
    tries INTEGER NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    lease_token BIGINT NOT NULL,
    lease_until BIGINT NOT NULL,
    last_status INTEGER,
    last_latency_ms INTEGER,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    ended_at BIGINT
);
-- Due deliveries, oldest first; an endpoint's log, newest first; ended ones, to prune (a
-- partial index: a delivery enters it when it ends, not in the transaction of the change that
-- records it, which pays for the two others).
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
CREATE INDEX webhook_deliveries_endpoint_id ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_ended ON webhook_deliveries (ended_at) WHERE ended_at IS NOT NULL;

CREATE TABLE webhook_attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    delivery_id BIGINT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempted_at BIGINT NOT NULL,
    status INTEGER,
    latency_ms INTEGER NOT NULL,
    error TEXT
);
CREATE INDEX webhook_attempts_delivery_id ON webhook_attempts (delivery_id, id);
