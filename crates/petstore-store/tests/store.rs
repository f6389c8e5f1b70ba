//! The store's own behaviour, each scenario run once per backend: what the conformance kit
//! (`petstore-conformance`, run at the end of this file on SQLite, PostgreSQL and PostgreSQL
//! through PgBouncer) cannot see through the storage interface alone: corrupt rows, the hashes
//! as stored, threads with pools of their own, migrations, reopening, outages, timeouts.

#[path = "store/clock.rs"]
mod clock;

use std::collections::HashSet;

use petstore_domain::{
    ApiKeyRepository, ApiKeySecret, Ban, CreatePet, KeySpec, Limit, OrderAction, OrderError,
    OrderRepository, OrderStatus, PageRequest, Pet, PetDraft, PetListQuery, PetRepository,
    PetStatus, PlaceOrder, Plan, Storage, StorageError, StorageErrorKind,
};
use petstore_store::for_each_backend;
use petstore_store::testing::{RawPostgres, TestDatabase};
use petstore_store::{Store, StoreConfig, StoreError};

#[derive(diesel::QueryableByName)]
struct RawKeyRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    key_hash: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    display_prefix: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    label: String,
}

/// The store's own error behind a storage-interface error.
fn store_error(error: &StorageError) -> &StoreError {
    error
        .backend_error()
        .downcast_ref::<StoreError>()
        .expect("the store's errors are StoreErrors")
}

/// Whether `result` failed as unavailable (a retry may help).
fn unavailable<T>(result: &Result<T, StorageError>) -> bool {
    matches!(result, Err(error) if error.kind() == StorageErrorKind::Unavailable)
}

/// The api_keys rows as the database holds them, read past the store.
fn raw_key_rows(url: &str) -> Vec<RawKeyRow> {
    use diesel::{Connection, RunQueryDsl, SqliteConnection};
    let sql = "SELECT key_hash, display_prefix, label FROM api_keys";
    if url.starts_with("postgres") {
        let rows = RawPostgres::connect(url)
            .expect("connect")
            .query(sql)
            .expect("read");
        rows.into_iter()
            .map(|row| {
                let text = |i: usize| row[i].clone().expect("not null");
                RawKeyRow {
                    key_hash: text(0),
                    display_prefix: text(1),
                    label: text(2),
                }
            })
            .collect()
    } else {
        diesel::sql_query(sql)
            .load(&mut SqliteConnection::establish(url).expect("connect"))
            .expect("read")
    }
}

/// How many migrations each backend has (the folders of `migrations/sqlite`).
const MIGRATIONS: usize = 11;

fn draft(name: &str, status: PetStatus) -> CreatePet {
    CreatePet::new(PetDraft::new(name, 1, status).expect("valid draft"))
}

/// A pet created in `store`.
async fn add(store: &Store, name: &str, status: PetStatus) -> Pet {
    store
        .create_pet(&draft(name, status))
        .await
        .expect("create")
}

fn page(limit: u32, after: Option<i64>, status: Option<PetStatus>) -> PetListQuery {
    PetListQuery {
        page: PageRequest {
            limit: Limit::new(limit).expect("valid limit"),
            after,
        },
        status,
    }
}

/// Every pet reachable by following `next_after` from the start.
async fn walk(store: &Store, limit: u32, status: Option<PetStatus>) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .list_pets(&page(limit, after, status))
            .await
            .expect("list");
        assert!(page.items.len() <= limit as usize);
        ids.extend(page.items.iter().map(|p| p.id));
        match page.next_after {
            Some(next) => after = Some(next),
            None => return ids,
        }
    }
}

async fn a_pet_stored_with_an_unknown_status_is_reported_as_corrupt(db: &TestDatabase) {
    let store = db.store().await;
    let good = add(&store, "Good", PetStatus::Sold).await;
    // The schema's CHECK refuses such a row; step around it as a hand edit might.
    let bypass_check = if db.url().starts_with("postgres") {
        "ALTER TABLE pets DROP CONSTRAINT pets_status_check;"
    } else {
        "PRAGMA ignore_check_constraints = ON;"
    };
    db.execute(&format!(
        "{bypass_check} INSERT INTO pets (name, category_id, status, created_at) \
             VALUES ('Odd', 1, 'adopted', 0)"
    ));
    let odd = good.id + 1;
    // An order reads the pet's status too (its row locked, in the order's transaction).
    let order = PlaceOrder {
        pet_id: odd,
        owner: None,
        completion: None,
    };
    let ordered = store
        .place_order(&order)
        .await
        .map(|_| ())
        .map_err(|error| match error {
            OrderError::Storage(error) => error,
            other => panic!("expected a storage error, got {other:?}"),
        });
    for result in [
        store.find_pet(odd).await.map(|_| ()),
        store.list_pets(&page(10, None, None)).await.map(|_| ()),
        ordered,
    ] {
        match result.as_ref().map_err(store_error) {
            Err(StoreError::Corrupt {
                table: "pets",
                reason,
            }) => {
                assert!(reason.contains(&format!("pet {odd}")), "{reason}");
                assert!(reason.contains("\"adopted\""), "{reason}");
            }
            other => panic!("expected a corrupt-row error, got {other:?}"),
        }
    }
    assert_eq!(
        store.find_pet(good.id).await.expect("find"),
        Some(good),
        "other rows still read"
    );
}

async fn concurrent_creates_from_threads_with_pools_of_their_own_all_commit(db: &TestDatabase) {
    db.store().await;
    // 16 threads, each with a runtime of its own (as 16 server workers): on PostgreSQL each
    // thread has its own pool, of one connection here.
    let mut config = StoreConfig::new(db.url());
    config.workers = 16;
    config.pool_size = 16;
    let store = Store::open(&config).expect("open");
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(async {
                    let mut ids = Vec::new();
                    for i in 0..50 {
                        let pet = draft(&format!("t{t} p{i}"), PetStatus::Pending);
                        ids.push(store.create_pet(&pet).await.expect("create").id);
                    }
                    ids
                })
            })
        })
        .collect();
    let ids: Vec<i64> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("thread"))
        .collect();
    let unique: HashSet<i64> = ids.iter().copied().collect();
    assert_eq!(unique.len(), 800);
    let mut expected: Vec<i64> = unique.into_iter().collect();
    expected.sort_unstable();
    assert_eq!(
        walk(&store, 100, None).await,
        expected,
        "every acknowledged pet is stored"
    );
}

/// Whether `secret` authenticates (as the key's current or rotated-out secret).
async fn keys_are_stored_only_as_hashes(db: &TestDatabase) {
    let store = db.store().await;
    let (_, secret) = store
        .create_key(&KeySpec::new(Plan::Free, "", None).expect("spec"))
        .await
        .expect("create");
    let unknown = ApiKeySecret::from_random_bytes([9; 32]);
    assert_eq!(
        store.find_active_key(&unknown.hash()).await.expect("find"),
        None
    );
    let rows = raw_key_rows(db.url());
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(
        row.key_hash,
        secret.hash().as_str(),
        "the stored value is the hash"
    );
    assert_eq!(row.display_prefix, &secret.expose()[..12]);
    // Past the display prefix (kept in clear on purpose), no run of 8 of the secret's
    // characters is stored anywhere: a column holding the secret, or part of it, fails.
    let hidden = &secret.expose()[petstore_domain::key::DISPLAY_PREFIX_LEN..];
    for column in [&row.key_hash, &row.display_prefix, &row.label] {
        for start in 0..=hidden.len() - 8 {
            let run = &hidden[start..start + 8];
            assert!(
                !column.contains(run),
                "a column holds part of the secret: {column}"
            );
        }
    }
}

async fn migrating_twice_applies_nothing_the_second_time(db: &TestDatabase) {
    let store = db.store().await;
    assert_eq!(
        store.migrate().await.expect("migrate"),
        Vec::<String>::new()
    );
    store.check_ready().await.expect("ready");
}

async fn data_survives_reopening_the_store(db: &TestDatabase) {
    let id = add(&db.store().await, "Rex", PetStatus::Sold).await.id;
    let reopened = Store::open(&StoreConfig::new(db.url())).expect("open");
    assert_eq!(
        reopened.find_pet(id).await.expect("find").map(|p| p.name),
        Some("Rex".into())
    );
}

for_each_backend!(
    a_pet_stored_with_an_unknown_status_is_reported_as_corrupt,
    concurrent_creates_from_threads_with_pools_of_their_own_all_commit,
    keys_are_stored_only_as_hashes,
    migrating_twice_applies_nothing_the_second_time,
    data_survives_reopening_the_store,
);

async fn a_fresh_database_is_not_ready_until_migrated(db: &TestDatabase) {
    let store = Store::open(&StoreConfig::new(db.url())).expect("open");
    let error = store.check_ready().await.expect_err("not migrated");
    assert_eq!(error.kind(), StorageErrorKind::Failed);
    match store_error(&error) {
        StoreError::Migration(message, _) => {
            assert!(message.contains("run `petstore migrate`"), "{message}");
            assert!(
                message.contains("create_catalogue"),
                "names the pending ones: {message}"
            );
        }
        other => panic!("expected a migration error, got {other:?}"),
    }
    assert_eq!(
        store.pending_migrations().await.expect("pending").len(),
        MIGRATIONS
    );
    let before = store.migration_status().await.expect("status");
    assert_eq!(
        (before.applied.len(), before.pending.len()),
        (0, MIGRATIONS),
        "{before:?}"
    );
    assert_eq!(store.migrate().await.expect("migrate").len(), MIGRATIONS);
    assert!(
        store
            .pending_migrations()
            .await
            .expect("pending")
            .is_empty()
    );
    store.check_ready().await.expect("ready");
    let after = store.migration_status().await.expect("status");
    assert_eq!(
        after.applied, before.pending,
        "the same names, oldest first"
    );
    assert!(
        after.pending.is_empty() && after.unknown.is_empty(),
        "{after:?}"
    );
    // A version a newer build applied is reported, not taken for one of ours.
    db.execute("INSERT INTO __diesel_schema_migrations (version) VALUES ('29991231000000')");
    let newer = store.migration_status().await.expect("status");
    assert_eq!(
        newer.unknown,
        vec!["29991231000000".to_owned()],
        "{newer:?}"
    );
    assert_eq!(newer.applied, after.applied);
}

async fn reads_are_answered_whether_or_not_a_connection_is_idle(db: &TestDatabase) {
    let pet = add(&db.store().await, "Inline", PetStatus::Sold).await;
    // One connection, none opened ahead of time: the first read finds none idle (on SQLite
    // it runs on a blocking thread and opens one), the next finds it idle (on SQLite it runs
    // on this thread).
    let mut config = StoreConfig::new(db.url());
    config.pool_size = 1;
    config.keep_warm = false;
    let store = Store::open(&config).expect("open");
    for _ in 0..3 {
        assert_eq!(
            store.find_pet(pet.id).await.expect("find"),
            Some(pet.clone())
        );
    }
    // Concurrent reads beyond the one connection wait for it, and are all answered.
    let query = PetListQuery::default();
    let reads = (0..8).map(|_| store.list_pets(&query));
    for page in futures_util::future::join_all(reads).await {
        assert_eq!(page.expect("list").items, vec![pet.clone()]);
    }
}

async fn closing_the_store_keeps_what_it_acknowledged_and_refuses_what_follows(db: &TestDatabase) {
    let store = db.store().await;
    let creates = (0..20).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .create_pet(&draft(&format!("pet {i}"), PetStatus::Available))
                .await
        })
    });
    let created: Vec<Pet> = futures_util::future::join_all(creates)
        .await
        .into_iter()
        .map(|task| task.expect("task").expect("created before the close"))
        .collect();
    store.close();
    let refused = store.find_pet(created[0].id).await;
    assert!(unavailable(&refused), "{refused:?}");
    assert!(
        matches!(
            store_error(refused.as_ref().expect_err("closed")),
            StoreError::Closed | StoreError::WriterStopped | StoreError::Connect(_)
        ),
        "{refused:?}"
    );
    let reopened = Store::open(&StoreConfig::new(db.url())).expect("open");
    assert_eq!(
        walk(&reopened, 100, None).await.len(),
        20,
        "every acknowledged pet is stored"
    );
}

for_each_backend!(
    a_fresh_database_is_not_ready_until_migrated,
    reads_are_answered_whether_or_not_a_connection_is_idle,
    closing_the_store_keeps_what_it_acknowledged_and_refuses_what_follows,
);

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
    let store = db.store().await;
    let pet = add(&store, "Rex", PetStatus::Available).await;
    let order = PlaceOrder {
        pet_id: pet.id,
        owner: None,
        completion: None,
    };
    let order = store.place_order(&order).await.expect("placed");
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
    let mut config = StoreConfig::new(db.url());
    config.statement_timeout = std::time::Duration::from_secs(60);
    let store = Store::open(&config).expect("open");
    store.migrate().await.expect("migrate");
    let pet = add(&store, "Rex", PetStatus::Available).await;
    let order = PlaceOrder {
        pet_id: pet.id,
        owner: None,
        completion: None,
    };
    let order = store.place_order(&order).await.expect("placed");
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

#[test]
fn every_backend_has_the_same_migrations() {
    let names = |backend: &str| {
        let folders = petstore_store::testing::migration_folders(backend);
        for (name, path) in &folders {
            for file in ["up.sql", "down.sql"] {
                assert!(path.join(file).is_file(), "{backend}/{name}/{file}");
            }
        }
        folders
            .into_iter()
            .map(|(name, _)| name)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names("sqlite"),
        names("postgres"),
        "migrations must stay in lockstep"
    );
    assert_eq!(
        names("mysql"),
        names("postgres"),
        "migrations must stay in lockstep"
    );
}

#[tokio::test]
async fn a_migration_waits_for_the_lock_longer_than_the_statement_timeout() {
    use petstore_store::testing::MIGRATION_LOCK as LOCK;
    let Some(db) = petstore_store::testing::TestDatabase::postgres() else {
        return;
    };
    let holder = RawPostgres::connect(db.url()).expect("connect");
    holder
        .execute(&format!("SELECT pg_advisory_lock({LOCK})"))
        .expect("take the migration lock");
    let mut config = StoreConfig::new(db.url());
    config.statement_timeout = std::time::Duration::from_millis(500);
    let store = Store::open(&config).expect("open");
    let migrating = tokio::spawn(async move { store.migrate().await });
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    assert!(!migrating.is_finished(), "the migration waits for the lock");
    holder
        .execute(&format!("SELECT pg_advisory_unlock({LOCK})"))
        .expect("release");
    let applied = migrating
        .await
        .expect("task")
        .expect("migrated after the wait");
    assert_eq!(applied.len(), MIGRATIONS);
}

#[test]
fn processes_starting_together_on_a_new_sqlite_file_migrate_once() {
    let db = petstore_store::testing::TestDatabase::sqlite();
    let starters: Vec<_> = (0..6)
        .map(|_| {
            let url = db.url().to_owned();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(async {
                    Store::open(&StoreConfig::new(url))
                        .expect("open")
                        .migrate()
                        .await
                })
            })
        })
        .collect();
    let applied: usize = starters
        .into_iter()
        .map(|s| {
            s.join()
                .expect("thread")
                .expect("every start succeeds")
                .len()
        })
        .sum();
    assert_eq!(applied, MIGRATIONS, "each migration applied exactly once");
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

/// The connections a PostgreSQL store holds, as the server counts them.
#[tokio::test]
async fn on_postgres_each_thread_shares_one_connection_for_reads_and_pools_its_writes() {
    let Some(db) = petstore_store::testing::TestDatabase::postgres() else {
        return;
    };
    let setup = db.store().await;
    let (key, _) = setup
        .create_key(&KeySpec::new(Plan::Free, "", None).expect("spec"))
        .await
        .expect("key");
    setup.close();
    drop(setup);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await; // its connections close
    // Three workers sharing 6 connections: 2 each for writes, and one each that reads share.
    let mut config = StoreConfig::new(db.url());
    config.pool_size = 6;
    config.workers = 3;
    let store = Store::open(&config).expect("open");
    // Counted while the threads live: a connection lives as long as the runtime driving it.
    let (worked, counted) = (
        std::sync::Arc::new(std::sync::Barrier::new(4)),
        std::sync::Arc::new(std::sync::Barrier::new(4)),
    );
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let store = store.clone();
            let (worked, counted) = (worked.clone(), counted.clone());
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(async {
                    let query = PetListQuery::default();
                    let reads = (0..20).map(|_| store.list_pets(&query));
                    let writes = (0..20).map(|i| store.touch_key(key.id, i));
                    let (reads, writes) = futures_util::future::join(
                        futures_util::future::join_all(reads),
                        futures_util::future::join_all(writes),
                    )
                    .await;
                    assert!(reads.iter().all(Result::is_ok), "{reads:?}");
                    assert!(writes.iter().all(Result::is_ok), "{writes:?}");
                });
                worked.wait();
                counted.wait();
                store.close();
            })
        })
        .collect();
    worked.wait();
    let open = db.connections();
    counted.wait();
    for thread in threads {
        thread.join().expect("thread");
    }
    assert!(
        (4..=9).contains(&open),
        "3 shared + at most 2 pooled per thread: {open}"
    );
    drop(store);
    // Closed: the server sees them go.
    let started = std::time::Instant::now();
    while db.connections() > 0 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "connections left open"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Standbys to read from are PostgreSQL servers, of a PostgreSQL primary: anything else is a
/// configuration that cannot work, refused when the store opens.
#[test]
fn read_urls_name_postgresql_standbys_of_a_postgresql_primary() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let mut on_sqlite = StoreConfig::new(dir.path().join("pets.db").display().to_string());
    on_sqlite.read_urls = vec!["postgres://u@standby/db".to_owned()];
    let refused = Store::open(&on_sqlite).expect_err("no standby of a SQLite file");
    assert!(matches!(refused, StoreError::Config(_)), "{refused:?}");
    let mut not_postgres = StoreConfig::new("postgres://u@primary/db");
    not_postgres.read_urls = vec!["redis://u:secret@standby/0".to_owned()];
    let refused = Store::open(&not_postgres).expect_err("a standby is a PostgreSQL server");
    assert!(matches!(refused, StoreError::Config(_)), "{refused:?}");
    assert!(!refused.to_string().contains("secret"), "{refused}");
}

/// Migrations hold an advisory lock across transactions, which a transaction pooler cannot
/// give: through `pooler=transaction` they are refused before any connection, naming the fix.
#[tokio::test]
async fn migrations_through_a_transaction_pooler_are_refused_naming_the_fix() {
    let store = Store::open(&StoreConfig::new(
        "postgres://u@127.0.0.1:1/db?pooler=transaction",
    ))
    .expect("open");
    let refused = store.migrate().await.expect_err("refused");
    assert!(matches!(refused, StoreError::Config(_)), "{refused:?}");
    assert!(refused.to_string().contains("--no-migrate"), "{refused}");
}

/// The storage scenarios every backend must pass (`petstore-conformance`), on each of the
/// store's databases.
mod conformance {
    use std::sync::Arc;

    use petstore_conformance::{Fresh, conformance_tests};
    use petstore_store::testing::TestDatabase;

    async fn fresh(db: Option<TestDatabase>) -> Option<Fresh> {
        let db = db?;
        let store = db.store().await;
        Some(Fresh::new(Arc::new(store)).keeping(db))
    }

    mod sqlite {
        async fn fresh() -> Option<super::Fresh> {
            super::fresh(Some(super::TestDatabase::sqlite())).await
        }
        super::conformance_tests!(fresh);
    }

    mod postgres {
        async fn fresh() -> Option<super::Fresh> {
            super::fresh(super::TestDatabase::postgres()).await
        }
        super::conformance_tests!(fresh);
    }

    mod mysql {
        async fn fresh() -> Option<super::Fresh> {
            super::fresh(super::TestDatabase::mysql()).await
        }
        super::conformance_tests!(fresh);
    }

    mod pgbouncer {
        async fn fresh() -> Option<super::Fresh> {
            super::fresh(super::TestDatabase::postgres_through_pgbouncer()).await
        }
        super::conformance_tests!(fresh);
    }
}

/// A MariaDB session of the test's own, on a thread of its own, that runs `sql` (a transaction
/// it opens and leaves open: holding rows) and closes when `release` is sent.
fn mariadb_holder(url: &str, sql: &str) -> std::sync::mpsc::Sender<()> {
    use diesel_async::{AsyncConnection, AsyncMysqlConnection, SimpleAsyncConnection};
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (ready, holding) = std::sync::mpsc::channel::<()>();
    let (url, sql) = (url.to_owned(), sql.to_owned());
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(async {
                let mut conn = AsyncMysqlConnection::establish(&url)
                    .await
                    .expect("connect");
                conn.batch_execute(&sql).await.expect("hold the rows");
                ready.send(()).expect("ready");
                let _ = tokio::task::spawn_blocking(move || released.recv()).await;
                conn.batch_execute("ROLLBACK").await.expect("release");
            });
    });
    holding.recv().expect("the holder started");
    release
}

/// On MariaDB, a change given up on while it waits for a row lock has its statement killed
/// (`KILL QUERY`) and its session closed: the rows it locked are free again at once, not when
/// the lock it waits for is released or its lock wait times out.
#[tokio::test]
async fn on_mariadb_a_change_given_up_on_while_it_waits_frees_the_rows_it_locked_at_once() {
    let Some(db) = TestDatabase::mysql() else {
        return;
    };
    // A lock wait far longer than the test waits: only the kill frees the rows in time.
    let mut config = StoreConfig::new(db.url());
    config.statement_timeout = std::time::Duration::from_secs(60);
    let store = Store::open(&config).expect("open");
    store.migrate().await.expect("migrate");
    let pet = add(&store, "Rex", PetStatus::Available).await;
    let order = PlaceOrder {
        pet_id: pet.id,
        owner: None,
        completion: None,
    };
    let order = store.place_order(&order).await.expect("placed");
    // Another session holds the pet's row: a cancel locks the order, then waits for the pet.
    let holder = mariadb_holder(
        db.url(),
        &format!(
            "BEGIN; SELECT id FROM pets WHERE id = {} FOR UPDATE",
            pet.id
        ),
    );
    let waiting = async {
        loop {
            // (MariaDB waits for a primary-key row lock while it plans the statement, in state
            // "Statistics", not as a transaction in `LOCK WAIT`.)
            let waits = db_count(
                db.url(),
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                 WHERE db = DATABASE() AND id <> CONNECTION_ID() AND info LIKE '%FOR UPDATE%'",
            );
            if waits > 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        changed = store.change_order(order.id, None, OrderAction::Cancel) => {
            panic!("the cancel did not wait: {changed:?}")
        }
        () = waiting => {}
    }
    // Given up on: while the pet is still held, the order's row is free again.
    let order_lock = format!(
        "BEGIN; SELECT id FROM orders WHERE id = {} FOR UPDATE NOWAIT; ROLLBACK",
        order.id
    );
    let mut free = false;
    for _ in 0..30 {
        if petstore_store::testing::mysql_execute(db.url(), &order_lock).is_ok() {
            free = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    holder.send(()).expect("release the pet");
    assert!(free, "the order stayed locked by the abandoned cancel");
    let kept = store
        .find_order(order.id, None)
        .await
        .expect("find")
        .expect("the order");
    assert_eq!(kept.status, OrderStatus::Placed);
}

/// A count a MariaDB query answers (`SELECT COUNT(*) ...`), on a connection of its own.
fn db_count(url: &str, sql: &str) -> i64 {
    use diesel_async::{AsyncConnection, AsyncMysqlConnection, RunQueryDsl};
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    let (url, sql) = (
        url.to_owned(),
        format!("SELECT CAST(({sql}) AS SIGNED) AS count"),
    );
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(async {
                let mut conn = AsyncMysqlConnection::establish(&url)
                    .await
                    .expect("connect");
                diesel::sql_query(sql)
                    .get_result::<Count>(&mut conn)
                    .await
                    .expect("count")
                    .count
            })
    })
    .join()
    .expect("count thread")
}

/// On MariaDB, instances starting together migrate one after the other under the migration
/// lock: every one succeeds and each migration is applied once.
#[tokio::test]
async fn on_mariadb_stores_migrating_together_apply_each_migration_once() {
    let Some(db) = TestDatabase::mysql() else {
        return;
    };
    let stores: Vec<Store> = (0..4)
        .map(|_| Store::open(&StoreConfig::new(db.url())).expect("open"))
        .collect();
    let outcomes = futures_util::future::join_all(stores.iter().map(Store::migrate)).await;
    let mut applied = 0;
    for outcome in outcomes {
        applied += outcome.expect("every migration run succeeds").len();
    }
    let status = stores[0].migration_status().await.expect("status");
    assert!(status.pending.is_empty(), "{status:?}");
    assert_eq!(applied, status.applied.len(), "each migration applied once");
}

/// On MariaDB, connections the server closed (`KILL`: a restart, `wait_timeout`, a failover)
/// are unavailable, never a fault, and the store opens others: within as many calls as the pool
/// held closed connections, every call succeeds again.
#[tokio::test]
async fn on_mariadb_connections_the_server_closes_are_unavailable_and_replaced() {
    let Some(db) = TestDatabase::mysql() else {
        return;
    };
    let store = db.store().await;
    add(&store, "Rex", PetStatus::Available).await;
    let name = db
        .url()
        .rsplit('/')
        .next()
        .expect("the database's name")
        .to_owned();
    let mut refused = 0;
    for _ in 0..5 {
        let ids = db_ids(db.url(), &name);
        for id in ids {
            let _ =
                petstore_store::testing::mysql_execute(db.url(), &format!("KILL CONNECTION {id}"));
        }
        let mut tries = 0;
        loop {
            let write = store.create_pet(&draft("Tom", PetStatus::Available)).await;
            let read = store.list_pets(&page(10, None, None)).await;
            if write.is_ok() && read.is_ok() {
                break;
            }
            for error in [write.err(), read.err()].into_iter().flatten() {
                assert_eq!(error.kind(), StorageErrorKind::Unavailable, "{error:?}");
                refused += 1;
            }
            tries += 1;
            assert!(tries < 20, "the store kept using closed connections");
        }
    }
    assert!(refused > 0, "no call met a closed connection");
}

/// The ids of the sessions connected to the MariaDB database `name` (but the asker's).
fn db_ids(url: &str, name: &str) -> Vec<i64> {
    use diesel_async::{AsyncConnection, AsyncMysqlConnection, RunQueryDsl};
    #[derive(diesel::QueryableByName)]
    struct Id {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        id: i64,
    }
    let sql = format!(
        "SELECT CAST(id AS SIGNED) AS id FROM information_schema.PROCESSLIST \
         WHERE db = '{name}' AND id <> CONNECTION_ID()"
    );
    let url = url.to_owned();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(async {
                let mut conn = AsyncMysqlConnection::establish(&url)
                    .await
                    .expect("connect");
                diesel::sql_query(sql)
                    .load::<Id>(&mut conn)
                    .await
                    .expect("ids")
                    .into_iter()
                    .map(|row| row.id)
                    .collect()
            })
    })
    .join()
    .expect("ids thread")
}
