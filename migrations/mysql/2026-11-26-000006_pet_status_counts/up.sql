-- Kept in lockstep with migrations/postgres: the same table, kept by triggers in the
-- transaction of every change to a pet (created, its status changed, deleted), whatever wrote
-- it. Each status is spread over 16 slots, a pet counted in slot `id % 16`, so that concurrent
-- creates take different row locks.
CREATE TABLE pet_status_counts (
    status VARCHAR(16) NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
    slot INTEGER NOT NULL CHECK (slot >= 0),
    pets BIGINT NOT NULL,
    PRIMARY KEY (status, slot)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TRIGGER pets_count_insert AFTER INSERT ON pets FOR EACH ROW
    UPDATE pet_status_counts SET pets = pets + 1
    WHERE status = NEW.status AND slot = ABS(NEW.id % 16);

-- A status change takes both of its slot's rows in status order: a change each way at once
-- (an order placed, another cancelled) would otherwise each hold one row and wait for the other.
CREATE TRIGGER pets_count_update AFTER UPDATE ON pets FOR EACH ROW
BEGIN
    IF NOT (OLD.status <=> NEW.status) THEN
        IF OLD.status < NEW.status THEN
            UPDATE pet_status_counts SET pets = pets - 1
            WHERE status = OLD.status AND slot = ABS(OLD.id % 16);
            UPDATE pet_status_counts SET pets = pets + 1
            WHERE status = NEW.status AND slot = ABS(NEW.id % 16);
        ELSE
            UPDATE pet_status_counts SET pets = pets + 1
            WHERE status = NEW.status AND slot = ABS(NEW.id % 16);
            UPDATE pet_status_counts SET pets = pets - 1
            WHERE status = OLD.status AND slot = ABS(OLD.id % 16);
        END IF;
    END IF;
END;

CREATE TRIGGER pets_count_delete AFTER DELETE ON pets FOR EACH ROW
    UPDATE pet_status_counts SET pets = pets - 1
    WHERE status = OLD.status AND slot = ABS(OLD.id % 16);

INSERT INTO pet_status_counts (status, slot, pets)
WITH RECURSIVE slots (slot) AS (SELECT 0 UNION ALL SELECT slot + 1 FROM slots WHERE slot < 15),
statuses (status) AS (SELECT 'available' UNION ALL SELECT 'pending' UNION ALL SELECT 'sold')
SELECT statuses.status, slots.slot,
    (SELECT COUNT(*) FROM pets WHERE pets.status = statuses.status AND ABS(pets.id % 16) = slots.slot)
FROM statuses CROSS JOIN slots;
