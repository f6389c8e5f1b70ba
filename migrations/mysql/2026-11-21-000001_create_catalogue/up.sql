-- Kept in lockstep with migrations/postgres and migrations/sqlite: same tables, columns and
-- constraints, in MariaDB's and MySQL's terms: InnoDB, utf8mb4 compared by code point
-- (`utf8mb4_bin`; it ignores trailing spaces, so a key that may hold them is bytes:
-- `idempotency_keys.idempotency_key`), columns that are unique or indexed as VARCHAR.
CREATE TABLE pets (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name TEXT NOT NULL,
    category_id BIGINT NOT NULL CHECK (category_id >= 1),
    status VARCHAR(16) NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
    created_at BIGINT NOT NULL,
    INDEX pets_status_id (status, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE orders (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    pet_id BIGINT NOT NULL,
    quantity INTEGER NOT NULL CHECK (quantity >= 1),
    status VARCHAR(16) NOT NULL,
    created_at BIGINT NOT NULL,
    CONSTRAINT orders_status_check CHECK (status IN ('placed', 'approved', 'delivered')),
    CONSTRAINT orders_pet_id_fkey FOREIGN KEY (pet_id) REFERENCES pets (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE api_keys (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    key_hash VARCHAR(128) NOT NULL UNIQUE,
    display_prefix VARCHAR(64) NOT NULL,
    plan VARCHAR(16) NOT NULL CHECK (plan IN ('free', 'pro', 'business', 'enterprise')),
    label TEXT NOT NULL,
    per_minute BIGINT,
    per_day BIGINT,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
