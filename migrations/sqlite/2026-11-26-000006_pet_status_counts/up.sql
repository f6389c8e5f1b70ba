-- Kept in lockstep with migrations/postgres: same table, and triggers that do the same.
-- How many pets have each status, kept by triggers in the transaction of every change to a pet
-- (created, its status changed by an order, deleted), whatever wrote it: the inventory reads
-- these few rows instead of counting the catalogue. PostgreSQL spreads each status over several
-- slots (rows) so that concurrent creates do not queue on one row lock; SQLite has one writer
-- at a time and keeps one slot per status.
CREATE TABLE pet_status_counts (
    status TEXT NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
    slot INTEGER NOT NULL CHECK (slot >= 0),
    pets BIGINT NOT NULL,
    PRIMARY KEY (status, slot)
);
INSERT INTO pet_status_counts (status, slot, pets)
SELECT statuses.status, 0, COALESCE(counted.pets, 0)
FROM (SELECT 'available' AS status UNION ALL SELECT 'pending' UNION ALL SELECT 'sold') AS statuses
LEFT JOIN (SELECT status, COUNT(*) AS pets FROM pets GROUP BY status) AS counted
    ON counted.status = statuses.status;

CREATE TRIGGER pets_count_insert AFTER INSERT ON pets
BEGIN
    UPDATE pet_status_counts SET pets = pets + 1 WHERE status = NEW.status AND slot = 0;
END;
CREATE TRIGGER pets_count_update AFTER UPDATE OF status ON pets
WHEN OLD.status <> NEW.status
BEGIN
    UPDATE pet_status_counts SET pets = pets - 1 WHERE status = OLD.status AND slot = 0;
    UPDATE pet_status_counts SET pets = pets + 1 WHERE status = NEW.status AND slot = 0;
END;
CREATE TRIGGER pets_count_delete AFTER DELETE ON pets
BEGIN
    UPDATE pet_status_counts SET pets = pets - 1 WHERE status = OLD.status AND slot = 0;
END;
