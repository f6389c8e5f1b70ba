//! The store when things fail: a server that cannot be reached, takes no writes or ends its
//! sessions; a deadlock; attempts recorded together after a conflict; writes and changes given
//! up on midway; SQLite batches rolled back whole; statements past their timeout; the SQLite
//! lock waited out.

use super::*;

#[tokio::test]
async fn an_unreachable_postgres_is_unavailable_not_a_hang() {
    let mut config = StoreConfig::new("postgres://postgres@127.0.0.1:1/none");
    config.connect_timeout = std::time::Duration::from_millis(500);
    let store = Store::open(&config).expect("open is lazy");
    let result = store.find_pet(1).await;
    assert!(unavailable(&result), "{result:?}");
    let error = result.expect_err("unreachable");
    assert!(
        matches!(store_error(&error), StoreError::Connect(_)),
        "{error:?}"
    );
}

/// A deadlock the database ends by rolling back the store's transaction (PostgreSQL's
/// `deadlock_detected`, which diesel-async reports without its code) is a conflict: unavailable,
/// to be retried (`503` with `Retry-After` over HTTP), not a fault; nothing of the transaction
/// is kept, and the call runs once the other session is done.
#[tokio::test]
async fn a_deadlock_the_database_ends_is_a_conflict_to_retry_not_a_fault() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let (store, pet, order) = a_placed_order_waiting_long(db.url()).await;
    // Another session holds the pet's row; a cancel locks the order, then waits for the pet.
    // That session then asks for the order: a cycle. Only the store's session looks for
    // deadlocks in time (the other's `deadlock_timeout` is long), so it is the one ended.
    let holder = std::sync::Arc::new(RawPostgres::connect(db.url()).expect("connect"));
    holder
        .execute(&format!(
            "SET deadlock_timeout = '60s'; BEGIN; SELECT id FROM pets WHERE id = {} FOR UPDATE",
            pet.id
        ))
        .expect("lock the pet");
    let cancel = store.change_order(order.id, None, OrderAction::Cancel);
    let cycle = async {
        a_session_waits_for_a_lock(db.url()).await;
        let holder = holder.clone();
        let order_lock = format!("SELECT id FROM orders WHERE id = {} FOR UPDATE", order.id);
        tokio::task::spawn_blocking(move || holder.execute(&order_lock))
            .await
            .expect("the holder's thread")
    };
    let (cancelled, locked) = tokio::join!(cancel, cycle);
    locked.expect("the holder gets the order once the store's transaction is rolled back");
    let Err(OrderError::Storage(error)) = cancelled else {
        panic!("not ended by the deadlock: {cancelled:?}");
    };
    assert_eq!(error.kind(), StorageErrorKind::Unavailable, "{error:?}");
    assert!(
        matches!(store_error(&error), StoreError::Conflict(_)),
        "{error:?}"
    );
    holder.execute("COMMIT").expect("release");
    // Rolled back whole; run again, it succeeds.
    let kept = store.find_order(order.id, None).await.expect("find");
    assert_eq!(kept.expect("the order").status, OrderStatus::Placed);
    let cancelled = store
        .change_order(order.id, None, OrderAction::Cancel)
        .await
        .expect("cancelled");
    assert_eq!(cancelled.status, OrderStatus::Cancelled);
}

/// Returns once a session of the database at `url` waits for a lock (panics after 10 s): a call
/// to give up on is then inside its transaction, not before it.
async fn a_session_waits_for_a_lock(url: &str) {
    let watcher = RawPostgres::connect(url).expect("connect");
    let waits = "SELECT count(*) FROM pg_stat_activity \
         WHERE datname = current_database() AND wait_event_type = 'Lock'";
    for _ in 0..200 {
        let rows = watcher.query(waits).expect("pg_stat_activity");
        if rows[0][0].as_deref() != Some("0") {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no session waited for a lock");
}

/// Whether `lock` (a `FOR UPDATE NOWAIT`) succeeds on a session of its own within `tries`
/// attempts, 100 ms apart.
async fn lockable_within(url: &str, lock: &str, tries: u32) -> bool {
    let checker = RawPostgres::connect(url).expect("connect");
    for _ in 0..tries {
        if checker.execute(lock).is_ok() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    false
}

/// A server that accepts no writes (a standby, a primary demoted: `read_only_sql_transaction`)
/// is unavailable, not a fault, and the connection that met it is not used again: once the
/// server takes writes, a write succeeds on a connection opened since.
#[tokio::test]
async fn a_server_that_takes_no_writes_is_unavailable_and_its_connection_not_kept() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    add(&db.store().await, "Rex", PetStatus::Available).await;
    let name = db
        .url()
        .rsplit('/')
        .next()
        .and_then(|tail| tail.split('?').next())
        .expect("the database's name")
        .to_owned();
    let admin = RawPostgres::connect(db.url()).expect("connect");
    // Sessions opened from now on are read-only, as on a standby: those of a store opened now.
    admin
        .execute(&format!(
            "ALTER DATABASE \"{name}\" SET default_transaction_read_only = on"
        ))
        .expect("read-only");
    let store = Store::open(&StoreConfig::new(db.url())).expect("open");
    let refused = store
        .create_pet(&draft("Tom", PetStatus::Available))
        .await
        .expect_err("a read-only server stores nothing");
    assert_eq!(refused.kind(), StorageErrorKind::Unavailable, "{refused:?}");
    assert!(format!("{refused:?}").contains("ReadOnly("), "{refused:?}");
    // Reads go on.
    assert_eq!(walk(&store, 10, None).await.len(), 1);
    // Writable again for new sessions: a write succeeds within as many tries as the pool
    // holds read-only sessions (each one a write meets is dropped), every failure unavailable,
    // never a fault.
    admin
        .execute(&format!(
            "ALTER DATABASE \"{name}\" RESET default_transaction_read_only"
        ))
        .expect("writable");
    let mut stored = None;
    for _ in 0..5 {
        match store.create_pet(&draft("Tom", PetStatus::Available)).await {
            Ok(pet) => {
                stored = Some(pet);
                break;
            }
            Err(error) => assert_eq!(error.kind(), StorageErrorKind::Unavailable, "{error:?}"),
        }
    }
    assert_eq!(
        stored.expect("stored once the server takes writes").name,
        "Tom"
    );
}

/// Sessions the server ends (`pg_terminate_backend`: what a fast shutdown, a failover manager or
/// an operator does; `57P01 admin_shutdown`) are unavailable, never a fault, whether the server's
/// message comes before the next statement or as its answer, and the store opens others.
#[tokio::test]
async fn sessions_the_server_ends_are_unavailable_and_replaced() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let store = db.store().await;
    add(&store, "Rex", PetStatus::Available).await;
    let name = db
        .url()
        .rsplit('/')
        .next()
        .and_then(|tail| tail.split('?').next())
        .expect("the database's name")
        .to_owned();
    let admin = RawPostgres::connect(db.url()).expect("connect");
    let end_sessions = format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = '{name}' AND pid <> pg_backend_pid()"
    );
    let mut refused = 0;
    for round in 0..20 {
        admin
            .execute(&end_sessions)
            .expect("end the store's sessions");
        // Some rounds at once (the server's message answers the statement), some after it came.
        if round % 2 == 1 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let write = store.create_pet(&draft("Tom", PetStatus::Available)).await;
        let read = store.list_pets(&page(10, None, None)).await;
        for error in [write.err(), read.err()].into_iter().flatten() {
            assert_eq!(error.kind(), StorageErrorKind::Unavailable, "{error:?}");
            refused += 1;
        }
        // The next calls find (or open) live sessions: within as many tries as the pools hold
        // ended ones (one per worker here), every failure unavailable.
        let mut tries = 0;
        loop {
            let write = store.create_pet(&draft("Tom", PetStatus::Available)).await;
            let read = store.list_pets(&page(10, None, None)).await;
            if write.is_ok() && read.is_ok() {
                break;
            }
            for error in [write.err(), read.err()].into_iter().flatten() {
                assert_eq!(error.kind(), StorageErrorKind::Unavailable, "{error:?}");
            }
            tries += 1;
            assert!(tries < 3, "the store kept using ended sessions");
        }
    }
    assert!(refused > 0, "no call met an ended session");
    // Once the server's ending of its sessions has reached the store, no call meets one: the
    // shared reading connection and the pooled ones are replaced before they are used.
    // (Waiting until each session has ended: then only its close is left to arrive.)
    let end_sessions_and_wait = format!(
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity \
         WHERE datname = '{name}' AND pid <> pg_backend_pid()"
    );
    for _ in 0..5 {
        admin
            .execute(&end_sessions_and_wait)
            .expect("end the store's sessions");
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        add(&store, "Felix", PetStatus::Available).await;
        walk(&store, 10, None).await;
    }
}

#[tokio::test]
async fn a_write_given_up_on_midway_ends_its_transaction_at_once() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let store = db.store().await;
    let pet = add(&store, "Rex", PetStatus::Available).await;
    // Another session holds the pet's row: an order waits for it inside its transaction.
    let holder = RawPostgres::connect(db.url()).expect("connect");
    let lock = format!("SELECT id FROM pets WHERE id = {} FOR UPDATE", pet.id);
    holder
        .execute(&format!("BEGIN; {lock}"))
        .expect("lock the pet");
    let order = PlaceOrder {
        pet_id: pet.id,
        owner: None,
        completion: None,
    };
    // Given up on once it waits for the lock inside its transaction (not before it got there).
    let waiting = a_session_waits_for_a_lock(db.url());
    tokio::select! {
        placed = store.place_order(&order) => panic!("the order did not wait: {placed:?}"),
        () = waiting => {}
    }
    holder.execute("COMMIT").expect("release the pet");
    // The order given up on must not take the lock and keep it: its session is closed, not
    // left idle in its transaction until the pool next looks at it.
    let free = lockable_within(db.url(), &format!("{lock} NOWAIT"), 50).await;
    assert!(
        free,
        "the pet is still locked by the abandoned order's transaction"
    );
    assert_eq!(
        store
            .find_pet(pet.id)
            .await
            .expect("find")
            .map(|p| p.status),
        Some(PetStatus::Available)
    );
}

#[tokio::test]
async fn a_change_given_up_on_while_it_waits_frees_the_rows_it_locked_at_once() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    // A statement timeout far longer than the test waits: only a cancel frees the rows in time.
    let (store, pet, order) = a_placed_order_waiting_long(db.url()).await;
    // Another session holds the pet's row: a cancel locks the order, then waits for the pet.
    let holder = RawPostgres::connect(db.url()).expect("connect");
    let pet_lock = format!("SELECT id FROM pets WHERE id = {} FOR UPDATE", pet.id);
    holder
        .execute(&format!("BEGIN; {pet_lock}"))
        .expect("lock the pet");
    let waiting = a_session_waits_for_a_lock(db.url());
    tokio::select! {
        changed = store.change_order(order.id, None, OrderAction::Cancel) => {
            panic!("the cancel did not wait: {changed:?}")
        }
        () = waiting => {}
    }
    // Given up on: while the pet is still held, the order's row is free again (its statement
    // cancelled, its transaction rolled back), not held until the pet's holder lets go.
    let order_lock = format!(
        "SELECT id FROM orders WHERE id = {} FOR UPDATE NOWAIT",
        order.id
    );
    let free = lockable_within(db.url(), &order_lock, 30).await;
    holder.execute("COMMIT").expect("release the pet");
    assert!(free, "the order stayed locked by the abandoned cancel");
    let kept = store
        .find_order(order.id, None)
        .await
        .expect("find")
        .expect("the order");
    assert_eq!(kept.status, OrderStatus::Placed);
}

#[tokio::test]
async fn a_batch_that_sqlite_rolls_back_whole_is_answered_whole() {
    use diesel::connection::SimpleConnection;
    use diesel::{Connection, SqliteConnection};
    let db = TestDatabase::sqlite();
    let store = db.store().await;
    // A pet named `boom` makes SQLite roll back the whole transaction it is inserted in, as a
    // full disk or an I/O error in the middle of a statement may.
    db.execute(
        "CREATE TRIGGER boom BEFORE INSERT ON pets WHEN NEW.name = 'boom' \
         BEGIN SELECT RAISE(ROLLBACK, 'boom'); END;",
    );
    // The writer's first batch waits for this lock; the next pets queue behind it, and go
    // together in the next batch: `boom` among them, with pets before and after it.
    let mut holder = SqliteConnection::establish(db.url()).expect("connect");
    holder
        .batch_execute("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let names = ["first", "a", "b", "boom", "c", "d", "e"];
    let creates = names.map(|name| draft(name, PetStatus::Available));
    let release = async {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        holder.batch_execute("COMMIT").expect("release the lock");
    };
    let (results, ()) = tokio::join!(
        futures_util::future::join_all(creates.iter().map(|pet| store.create_pet(pet))),
        release
    );
    // Every pet answered as created is stored, and no other: none committed on its own after
    // the transaction was gone.
    let created: Vec<i64> = results
        .iter()
        .filter_map(|result| result.as_ref().ok().map(|pet| pet.id))
        .collect();
    assert!(results[3].is_err(), "{results:?}");
    assert_eq!(walk(&store, 100, None).await, created, "{results:?}");
}

#[tokio::test]
async fn a_statement_past_the_timeout_is_cancelled_as_unavailable() {
    let Some(db) = petstore_store::testing::TestDatabase::postgres() else {
        return;
    };
    db.store().await;
    let mut config = StoreConfig::new(db.url());
    config.statement_timeout = std::time::Duration::from_millis(200);
    let store = Store::open(&config).expect("open");
    let holder = RawPostgres::connect(db.url()).expect("connect");
    holder
        .execute("BEGIN; LOCK TABLE pets IN ACCESS EXCLUSIVE MODE")
        .expect("lock the table");
    let started = std::time::Instant::now();
    let result = store.list_pets(&PetListQuery::default()).await;
    assert!(unavailable(&result), "{result:?}");
    let error = result.as_ref().expect_err("timed out");
    assert!(
        matches!(store_error(error), StoreError::TimedOut(..)),
        "{error:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    holder.execute("ROLLBACK").expect("unlock");
    assert!(
        store.list_pets(&PetListQuery::default()).await.is_ok(),
        "works again"
    );
}

#[tokio::test]
async fn a_write_that_waits_out_the_sqlite_lock_is_unavailable_not_a_fault() {
    use diesel::connection::SimpleConnection;
    use diesel::{Connection, SqliteConnection};
    let db = petstore_store::testing::TestDatabase::sqlite();
    db.store().await; // migrated
    let mut config = StoreConfig::new(db.url());
    config.statement_timeout = std::time::Duration::from_millis(200);
    let store = Store::open(&config).expect("open");
    let (key, _) = store
        .create_key(&KeySpec::new(Plan::Free, "", None).expect("spec"))
        .await
        .expect("create key");
    // Another process holds SQLite's write lock (`petstore keys`, say).
    let mut holder = SqliteConnection::establish(db.url()).expect("connect");
    holder
        .batch_execute("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let created = store
        .create_pet(&draft("Waiting", PetStatus::Available))
        .await;
    let banned = store
        .ban_key(
            key.id,
            Ban {
                until: u64::MAX,
                level: 1,
            },
            0,
        )
        .await;
    for (what, error) in [
        ("a queued pet", created.map(|_| ()).expect_err("locked out")),
        (
            "a pooled write",
            banned.map(|_| ()).expect_err("locked out"),
        ),
    ] {
        assert_eq!(
            error.kind(),
            StorageErrorKind::Unavailable,
            "{what}: {error:?}"
        );
        assert!(
            matches!(
                store_error(&error),
                StoreError::TimedOut(..) | StoreError::Batch(_)
            ),
            "{what}: {error:?}"
        );
    }
    holder.batch_execute("ROLLBACK").expect("release");
    store
        .create_pet(&draft("After", PetStatus::Available))
        .await
        .expect("writes work again");
}

/// Attempts recorded together whose transaction the database ends as a conflict (as it ends a
/// deadlock with an endpoint being turned off) are recorded again, each alone: every one is
/// recorded once. Here PostgreSQL refuses, as a serialization failure, any transaction that
/// records a second attempt.
#[tokio::test]
async fn attempts_recorded_together_are_recorded_alone_after_a_conflict() {
    use petstore_domain::WebhookRepository;
    use petstore_domain::webhook::{AttemptRecord, AttemptResult, DeliveryState, EndpointOwner};
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let store = db.store().await;
    let endpoint = an_operators_endpoint(&store).await;
    add(&store, "Rex", PetStatus::Available).await;
    add(&store, "Tom", PetStatus::Available).await;
    let claim = claim_of_ten(7);
    let now = claim.now;
    let claimed = store.claim_webhook_deliveries(&claim).await.expect("claim");
    assert_eq!(claimed.len(), 2, "{claimed:?}");
    db.execute(
        "CREATE FUNCTION one_attempt_a_transaction() RETURNS trigger AS $$ BEGIN \
           IF current_setting('petstore_test.attempted', true) = 'yes' THEN \
             RAISE EXCEPTION 'a second attempt' USING ERRCODE = 'serialization_failure'; \
           END IF; \
           PERFORM set_config('petstore_test.attempted', 'yes', true); \
           RETURN NEW; \
         END $$ LANGUAGE plpgsql; \
         CREATE TRIGGER one_attempt BEFORE INSERT ON webhook_attempts \
           FOR EACH ROW EXECUTE FUNCTION one_attempt_a_transaction()",
    );
    let records: Vec<AttemptRecord> = claimed
        .iter()
        .map(|due| AttemptRecord {
            delivery: due.id,
            lease: due.lease,
            attempted_at: now,
            status: Some(204),
            latency_ms: 5,
            error: None,
            result: AttemptResult::Delivered,
        })
        .collect();
    assert_eq!(
        store
            .record_webhook_attempts(&records)
            .await
            .expect("recorded"),
        vec![true, true]
    );
    for due in &claimed {
        let (delivery, attempts) = store
            .find_webhook_delivery(endpoint.id, due.id, EndpointOwner::Operator)
            .await
            .expect("find")
            .expect("the endpoint's");
        assert_eq!(
            (delivery.state, attempts.len()),
            (DeliveryState::Delivered, 1),
            "{delivery:?}"
        );
    }
}
