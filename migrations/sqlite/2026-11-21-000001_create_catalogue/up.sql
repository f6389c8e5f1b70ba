-- Ids are 64-bit and never reused (AUTOINCREMENT), so a keyset cursor stays meaningful.
-- Times are Unix seconds (BIGINT), a type both backends share.
CREATE TABLE pets (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    name TEXT NOT NULL,
    category_id BIGINT NOT NULL CHECK (category_id >= 1),
    status TEXT NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
    created_at BIGINT NOT NULL
);
-- Serves `status = ? AND id > ? ORDER BY id` (the filtered keyset page) without a sort.
CREATE INDEX pets_status_id ON pets (status, id);

CREATE TABLE orders (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    pet_id BIGINT NOT NULL REFERENCES pets (id),
    quantity INTEGER NOT NULL CHECK (quantity >= 1),
    status TEXT NOT NULL CHECK (status IN ('placed', 'approved', 'delivered')),
    created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    display_prefix TEXT NOT NULL,
    plan TEXT NOT NULL CHECK (plan IN ('free', 'pro', 'business', 'enterprise')),
    label TEXT NOT NULL,
    per_minute BIGINT,
    per_day BIGINT,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
