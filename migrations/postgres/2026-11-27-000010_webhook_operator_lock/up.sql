-- Kept in lockstep with migrations/sqlite and migrations/mysql.
-- One row, locked by the transaction that creates (or re-addresses) one of the operators'
-- webhook endpoints, as a key's row is for a key's: so that creates at once never pass the
-- operators' limit of endpoints, nor register one URL twice, together.
CREATE TABLE webhook_operator_lock (
    id BIGINT PRIMARY KEY
);
INSERT INTO webhook_operator_lock (id) VALUES (0);
