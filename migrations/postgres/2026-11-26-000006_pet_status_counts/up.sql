-- Kept in lockstep with migrations/sqlite: same table, and triggers that do the same.
-- How many pets have each status, kept by a trigger in the transaction of every change to a pet
-- (created, its status changed by an order, deleted), whatever wrote it: the inventory sums
-- these few rows instead of counting the catalogue. Each status is spread over 16 slots (rows),
-- a pet counted in slot `id % 16`, so that concurrent creates take different row locks instead
-- of queueing on one (docs/performance.md measures the difference). Updated in place: a low
-- fill factor leaves room on each page for the new row versions (HOT updates).
CREATE TABLE pet_status_counts (
    status TEXT NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
    slot INTEGER NOT NULL CHECK (slot >= 0),
    pets BIGINT NOT NULL,
    PRIMARY KEY (status, slot)
) WITH (fillfactor = 50);

CREATE FUNCTION pets_count_statuses() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE pet_status_counts SET pets = pets - 1
        WHERE status = OLD.status AND slot = OLD.id % 16;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE pet_status_counts SET pets = pets + 1
        WHERE status = NEW.status AND slot = NEW.id % 16;
    END IF;
    RETURN NULL;
END
$$;
-- Creating a trigger locks the table against writes until this migration's transaction
-- commits, so the counts filled below miss no concurrent change.
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
LEFT JOIN (SELECT status, (id % 16)::integer AS slot, COUNT(*) AS pets FROM pets GROUP BY 1, 2)
    AS counted USING (status, slot);
