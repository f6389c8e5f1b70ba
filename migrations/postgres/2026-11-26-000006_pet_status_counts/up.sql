-- Kept in lockstep with migrations/sqlite: same table, and triggers that do the same.
-- How many pets have each status, kept by a trigger in the transaction of every change to a pet
-- (created, its status changed by an order, deleted), whatever wrote it: the inventory sums
-- these few rows instead of counting the catalogue. Each status is spread over 16 slots (rows),
-- a pet counted in slot `abs(id % 16)`, so that concurrent creates take different row locks
-- instead of queueing on one (docs/performance.md measures the difference). Updated in place:
-- a low fill factor leaves room on each page for the new row versions (HOT updates).

-- Writes to pets wait from here until this migration's transaction commits (reads go on), so
-- the counts filled below miss no change, whatever the session's isolation level.
LOCK TABLE pets IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE pet_status_counts (
    status TEXT NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
    slot INTEGER NOT NULL CHECK (slot >= 0),
    pets BIGINT NOT NULL,
    PRIMARY KEY (status, slot)
) WITH (fillfactor = 50);

-- Run with its owner's rights (the role that migrates), so that the service's role needs only
-- to read the counts; its search path is fixed to the one this migration runs with.
CREATE FUNCTION pets_count_statuses() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        -- A status change takes both of its slot's rows, always in status order: a change
        -- each way at once (an order placed, another cancelled) would otherwise each hold one
        -- row and wait for the other's.
        PERFORM 1 FROM pet_status_counts
        WHERE slot = abs(NEW.id % 16) AND status IN (OLD.status, NEW.status)
        ORDER BY status FOR UPDATE;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE pet_status_counts SET pets = pets - 1
        WHERE status = OLD.status AND slot = abs(OLD.id % 16);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE pet_status_counts SET pets = pets + 1
        WHERE status = NEW.status AND slot = abs(NEW.id % 16);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER pets_count_insert AFTER INSERT ON pets
    FOR EACH ROW EXECUTE FUNCTION pets_count_statuses();
CREATE TRIGGER pets_count_update AFTER UPDATE OF status ON pets
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION pets_count_statuses();
CREATE TRIGGER pets_count_delete AFTER DELETE ON pets
    FOR EACH ROW EXECUTE FUNCTION pets_count_statuses();

INSERT INTO pet_status_counts (status, slot, pets)
SELECT statuses.status, slots.slot, COALESCE(counted.pets, 0)
FROM (VALUES ('available'), ('pending'), ('sold')) AS statuses (status)
CROSS JOIN generate_series(0, 15) AS slots (slot)
LEFT JOIN (SELECT status, abs(id % 16)::integer AS slot, COUNT(*) AS pets FROM pets GROUP BY 1, 2)
    AS counted USING (status, slot);
