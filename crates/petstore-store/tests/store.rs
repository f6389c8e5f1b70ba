//! Every store operation, each scenario run once per backend.

use std::collections::HashSet;

use petstore_domain::{
    ApiKeyRepository, ApiKeySecret, Ban, CreatePet, Inventory, KeyMatch, KeySpec, LifecycleError,
    Limit, OrderAction, OrderError, OrderListQuery, OrderRepository, OrderStatus, PageRequest,
    PetDraft, PetListQuery, PetRepository, PetStatus, PlaceOrder, Plan, RateLimits, Storage,
    StorageError, StorageErrorKind,
};
use petstore_store::for_each_backend;
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
    use diesel::{Connection, PgConnection, RunQueryDsl, SqliteConnection};
    let query = diesel::sql_query("SELECT key_hash, display_prefix, label FROM api_keys");
    if url.starts_with("postgres") {
        query
            .load(&mut PgConnection::establish(url).expect("connect"))
            .expect("read")
    } else {
        query
            .load(&mut SqliteConnection::establish(url).expect("connect"))
            .expect("read")
    }
}

/// Runs SQL past the store (to plant rows the service itself would never write).
fn raw_execute(url: &str, sql: &str) {
    use diesel::connection::SimpleConnection;
    use diesel::{Connection, PgConnection, SqliteConnection};
    if url.starts_with("postgres") {
        PgConnection::establish(url)
            .expect("connect")
            .batch_execute(sql)
    } else {
        SqliteConnection::establish(url)
            .expect("connect")
            .batch_execute(sql)
    }
    .expect("execute");
}

/// How many migrations each backend has (the folders of `migrations/sqlite`).
const MIGRATIONS: usize = 4;

fn draft(name: &str, status: PetStatus) -> CreatePet {
    CreatePet::new(PetDraft::new(name, 1, status).expect("valid draft"))
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
fn walk(store: &Store, limit: u32, status: Option<PetStatus>) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut after = None;
    loop {
        let page = store.list_pets(&page(limit, after, status)).expect("list");
        assert!(page.items.len() <= limit as usize);
        ids.extend(page.items.iter().map(|p| p.id));
        match page.next_after {
            Some(next) => after = Some(next),
            None => return ids,
        }
    }
}

for_each_backend! {
    fn a_pet_stored_with_an_unknown_status_is_reported_as_corrupt(db) {
        let store = db.store();
        let good = store.create_pet(&draft("Good", PetStatus::Sold)).expect("create");
        // The schema's CHECK refuses such a row; step around it as a hand edit might.
        let bypass_check = if db.url().starts_with("postgres") {
            "ALTER TABLE pets DROP CONSTRAINT pets_status_check;"
        } else {
            "PRAGMA ignore_check_constraints = ON;"
        };
        raw_execute(
            db.url(),
            &format!(
                "{bypass_check} INSERT INTO pets (name, category_id, status, created_at) \
                 VALUES ('Odd', 1, 'adopted', 0)"
            ),
        );
        let odd = good.id + 1;
        for result in [
            store.find_pet(odd).map(|_| ()),
            store.list_pets(&page(10, None, None)).map(|_| ()),
        ] {
            match result.as_ref().map_err(store_error) {
                Err(StoreError::Corrupt { table: "pets", reason }) => {
                    assert!(reason.contains(&format!("pet {odd}")), "{reason}");
                    assert!(reason.contains("\"adopted\""), "{reason}");
                }
                other => panic!("expected a corrupt-row error, got {other:?}"),
            }
        }
        assert_eq!(store.find_pet(good.id).expect("find"), Some(good), "other rows still read");
    }

    fn a_created_pet_reads_back_with_its_new_id(db) {
        let store = db.store();
        let created = store.create_pet(&draft("Rex", PetStatus::Pending)).expect("create");
        assert!(created.id >= 1);
        assert_eq!(created.name, "Rex");
        assert_eq!(created.status, PetStatus::Pending);
        assert_eq!(store.find_pet(created.id).expect("find"), Some(created));
    }

    fn concurrent_creates_all_commit_with_distinct_ids(db) {
        let store = db.store();
        let threads: Vec<_> = (0..16)
            .map(|t| {
                let store = store.clone();
                std::thread::spawn(move || {
                    (0..50)
                        .map(|i| store.create_pet(&draft(&format!("t{t} p{i}"), PetStatus::Pending)).expect("create").id)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let ids: Vec<i64> = threads.into_iter().flat_map(|t| t.join().expect("thread")).collect();
        let unique: HashSet<i64> = ids.iter().copied().collect();
        assert_eq!(unique.len(), 800);
        let mut expected: Vec<i64> = unique.into_iter().collect();
        expected.sort_unstable();
        assert_eq!(walk(&store, 100, None), expected, "every acknowledged pet is stored");
    }

    fn a_missing_pet_is_none(db) {
        let store = db.store();
        assert_eq!(store.find_pet(424_242).expect("find"), None);
        assert_eq!(store.find_pet(-1).expect("find"), None);
    }

    fn names_are_stored_exactly(db) {
        let store = db.store();
        let long = "ü".repeat(255);
        for name in ["Mötley 🐶", " padded ", long.as_str(), "quote ' and \" and ;--"] {
            let created = store.create_pet(&draft(name, PetStatus::Sold)).expect("create");
            let found = store.find_pet(created.id).expect("find").expect("present");
            assert_eq!(found.name, name);
        }
    }

    fn paging_visits_every_pet_once_in_ascending_order(db) {
        let store = db.store();
        let statuses = [PetStatus::Available, PetStatus::Sold, PetStatus::Pending];
        let mut all = Vec::new();
        for i in 0..23 {
            let status = statuses[i % 3];
            all.push((store.create_pet(&draft(&format!("pet {i}"), status)).expect("create").id, status));
        }
        let every: Vec<i64> = all.iter().map(|(id, _)| *id).collect();
        assert_eq!(walk(&store, 5, None), every);
        assert_eq!(walk(&store, 100, None), every);
        for status in statuses {
            let expected: Vec<i64> = all.iter().filter(|(_, s)| *s == status).map(|(id, _)| *id).collect();
            assert_eq!(walk(&store, 2, Some(status)), expected, "{status}");
        }
        let exact = store.list_pets(&page(23, None, None)).expect("list");
        assert_eq!(exact.items.len(), 23);
        assert_eq!(exact.next_after, None, "no next page when the page is exactly full");
    }

    fn an_empty_catalogue_lists_nothing(db) {
        let store = db.store();
        let empty = store.list_pets(&PetListQuery::default()).expect("list");
        assert!(empty.items.is_empty());
        assert_eq!(empty.next_after, None);
    }

    fn orders_list_in_id_order_with_paging_and_by_owner(db) {
        let store = db.store();
        let (owner, _) = store.create_key(&KeySpec::new(Plan::Pro, "customer", None).expect("spec")).expect("key");
        let mut ids = Vec::new();
        for i in 0..4 {
            let pet = store.create_pet(&draft(&format!("pet {i}"), PetStatus::Available)).expect("create");
            // Every other order is the customer's; the rest an operator's.
            let owner = (i % 2 == 0).then_some(owner.id);
            let order = store
                .place_order(&PlaceOrder { pet_id: pet.id, owner, completion: None })
                .expect("place");
            assert_eq!((order.status, order.owner, order.quantity), (OrderStatus::Placed, owner, 1));
            assert!(order.created_at > 1_700_000_000);
            ids.push(order.id);
        }
        let page = |after, owner| OrderListQuery { page: PageRequest { limit: Limit::new(2).expect("limit"), after }, owner };
        let first = store.list_orders(&page(None, None)).expect("list");
        assert_eq!(first.items.iter().map(|o| o.id).collect::<Vec<_>>(), ids[..2]);
        let rest = store.list_orders(&page(first.next_after, None)).expect("list");
        assert_eq!(rest.items.iter().map(|o| o.id).collect::<Vec<_>>(), ids[2..]);
        assert_eq!(rest.next_after, None);
        let mine = store.list_orders(&page(None, Some(owner.id))).expect("list");
        assert_eq!(mine.items.iter().map(|o| o.id).collect::<Vec<_>>(), vec![ids[0], ids[2]]);
        assert_eq!(store.find_order(ids[1], Some(owner.id)).expect("find"), None, "not theirs");
        assert!(store.find_order(ids[1], None).expect("find").is_some(), "operators see all");
    }

    fn the_order_lifecycle_moves_the_pet_in_the_same_transaction(db) {
        let store = db.store();
        let pet = store.create_pet(&draft("Rex", PetStatus::Available)).expect("create");
        let place = |pet_id| store.place_order(&PlaceOrder { pet_id, owner: None, completion: None });
        let order = place(pet.id).expect("place");
        let status = |id| store.find_pet(id).expect("find").expect("pet").status;
        assert_eq!(status(pet.id), PetStatus::Pending);
        assert!(matches!(place(pet.id), Err(OrderError::Refused(LifecycleError::PetNotAvailable(PetStatus::Pending)))));
        assert!(matches!(place(999), Err(OrderError::PetNotFound(999))));
        assert!(matches!(
            store.change_order(order.id, None, OrderAction::Deliver),
            Err(OrderError::Refused(LifecycleError::Transition { from: OrderStatus::Placed, .. }))
        ));
        store.change_order(order.id, None, OrderAction::Approve).expect("approve");
        assert_eq!(status(pet.id), PetStatus::Pending);
        store.change_order(order.id, None, OrderAction::Deliver).expect("deliver");
        assert_eq!(status(pet.id), PetStatus::Sold);
        assert_eq!(store.inventory().expect("inventory"), Inventory { available: 0, pending: 0, sold: 1 });
        assert!(matches!(store.change_order(4242, None, OrderAction::Cancel), Err(OrderError::OrderNotFound(4242))));
    }

    fn keys_are_found_by_secret_until_revoked(db) {
        let store = db.store();
        let spec = KeySpec::new(Plan::Pro, "ci", None).expect("spec");
        let (key, secret) = store.create_key(&spec).expect("create");
        assert_eq!(key.plan, Plan::Pro);
        assert_eq!(key.label, "ci");
        assert_eq!(key.display_prefix, secret.display_prefix());
        assert_eq!(store.find_active_key(&secret.hash()).expect("find"), Some(KeyMatch::current(key.clone())));

        assert!(store.revoke_key(key.id).expect("revoke"));
        assert_eq!(store.find_active_key(&secret.hash()).expect("find"), None);
        let listed = store.list_keys().expect("list");
        let revoked_at = listed[0].revoked_at.expect("revoked");
        assert!(store.revoke_key(key.id).expect("revoke again"), "revoking twice still finds the key");
        assert_eq!(store.list_keys().expect("list")[0].revoked_at, Some(revoked_at));
        assert!(!store.revoke_key(key.id + 1000).expect("revoke unknown"));
    }

    fn keys_are_stored_only_as_hashes(db) {
        let store = db.store();
        let (_, secret) = store.create_key(&KeySpec::new(Plan::Free, "", None).expect("spec")).expect("create");
        let unknown = ApiKeySecret::from_random_bytes([9; 32]);
        assert_eq!(store.find_active_key(&unknown.hash()).expect("find"), None);
        let rows = raw_key_rows(db.url());
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row.key_hash, secret.hash().as_str(), "the stored value is the hash");
        assert_eq!(row.display_prefix, &secret.expose()[..12]);
        // Past the display prefix (kept in clear on purpose), no run of 8 of the secret's
        // characters is stored anywhere: a column holding the secret, or part of it, fails.
        let hidden = &secret.expose()[petstore_domain::key::DISPLAY_PREFIX_LEN..];
        for column in [&row.key_hash, &row.display_prefix, &row.label] {
            for start in 0..=hidden.len() - 8 {
                let run = &hidden[start..start + 8];
                assert!(!column.contains(run), "a column holds part of the secret: {column}");
            }
        }
    }

    fn every_key_is_distinct_and_enterprise_limits_persist(db) {
        let store = db.store();
        let limits = RateLimits::custom(5_000, 2_000_000).expect("limits");
        let spec = KeySpec::new(Plan::Enterprise, "big", Some(limits)).expect("spec");
        let mut secrets = HashSet::new();
        for _ in 0..20 {
            let (key, secret) = store.create_key(&spec).expect("create");
            assert_eq!(key.custom_limits, Some(limits));
            assert_eq!(key.limits(), limits);
            assert!(secrets.insert(secret.expose().to_owned()));
        }
        assert_eq!(store.list_keys().expect("list").len(), 20);
    }

    fn a_ban_is_imposed_once_and_can_be_lifted(db) {
        let store = db.store();
        let (key, secret) = store.create_key(&KeySpec::new(Plan::Free, "abuser", None).expect("spec")).expect("create");
        assert_eq!(key.ban, None);
        let ban = Ban { until: 2_000, level: 1 };
        assert!(store.ban_key(key.id, ban, 1_000).expect("ban"));
        let other = Ban { until: 3_000, level: 2 };
        assert!(!store.ban_key(key.id, other, 1_500).expect("ban again"), "a ban is in force");
        let found = store.find_active_key(&secret.hash()).expect("find").expect("banned keys still authenticate").key;
        assert_eq!(found.ban, Some(ban));
        assert!(store.ban_key(key.id, other, 2_000).expect("escalate"), "the first ban has ended");
        assert_eq!(store.list_keys().expect("list")[0].ban, Some(other));
        assert!(store.unban_key(key.id).expect("unban"));
        assert_eq!(store.list_keys().expect("list")[0].ban, None);
        assert!(!store.unban_key(key.id + 99).expect("unban unknown"));
    }

    fn a_keys_plan_and_limits_can_change(db) {
        let store = db.store();
        let (key, secret) = store.create_key(&KeySpec::new(Plan::Free, "grows", None).expect("spec")).expect("create");
        let limits = RateLimits::custom(10_000, 5_000_000).expect("limits");
        assert!(store.update_key_plan(key.id, Plan::Enterprise, Some(limits)).expect("update"));
        let found = store.find_active_key(&secret.hash()).expect("find").expect("key").key;
        assert_eq!((found.plan, found.limits()), (Plan::Enterprise, limits));
        assert!(store.update_key_plan(key.id, Plan::Pro, None).expect("update"));
        let found = store.find_active_key(&secret.hash()).expect("find").expect("key").key;
        assert_eq!((found.plan, found.custom_limits), (Plan::Pro, None));
        assert!(!store.update_key_plan(key.id + 99, Plan::Pro, None).expect("update unknown"));
    }

    fn migrating_twice_applies_nothing_the_second_time(db) {
        let store = db.store();
        assert_eq!(store.migrate().expect("migrate"), Vec::<String>::new());
        store.check_ready().expect("ready");
    }

    fn data_survives_reopening_the_store(db) {
        let id = db.store().create_pet(&draft("Rex", PetStatus::Sold)).expect("create").id;
        let reopened = Store::open(&StoreConfig::new(db.url())).expect("open");
        assert_eq!(reopened.find_pet(id).expect("find").map(|p| p.name), Some("Rex".into()));
    }
}

#[test]
fn a_fresh_database_is_not_ready_until_migrated() {
    let db = petstore_store::testing::TestDatabase::sqlite();
    let store = Store::open(&StoreConfig::new(db.url())).expect("open");
    let error = store.check_ready().expect_err("not migrated");
    assert_eq!(error.kind(), StorageErrorKind::Failed);
    assert!(
        matches!(store_error(&error), StoreError::Migration(..)),
        "{error:?}"
    );
    assert_eq!(store.migrate().expect("migrate").len(), MIGRATIONS);
    store.check_ready().expect("ready");
}

#[test]
fn an_unreachable_postgres_is_unavailable_not_a_hang() {
    let mut config = StoreConfig::new("postgres://postgres@127.0.0.1:1/none");
    config.connect_timeout = std::time::Duration::from_millis(500);
    let store = Store::open(&config).expect("open is lazy");
    let result = store.find_pet(1);
    assert!(unavailable(&result), "{result:?}");
    let error = result.expect_err("unreachable");
    assert!(
        matches!(store_error(&error), StoreError::Connect(_)),
        "{error:?}"
    );
}

#[test]
fn both_backends_have_the_same_migrations() {
    let names = |backend: &str| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../migrations")
            .join(backend);
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        for name in &names {
            for file in ["up.sql", "down.sql"] {
                assert!(
                    dir.join(name).join(file).is_file(),
                    "{backend}/{name}/{file}"
                );
            }
        }
        names
    };
    assert_eq!(
        names("sqlite"),
        names("postgres"),
        "migrations must stay in lockstep"
    );
}

#[test]
fn a_migration_waits_for_the_lock_longer_than_the_statement_timeout() {
    use diesel::connection::SimpleConnection;
    use diesel::{Connection, PgConnection};
    use petstore_store::testing::MIGRATION_LOCK as LOCK;
    let Some(db) = petstore_store::testing::TestDatabase::postgres() else {
        return;
    };
    let mut holder = PgConnection::establish(db.url()).expect("connect");
    holder
        .batch_execute(&format!("SELECT pg_advisory_lock({LOCK})"))
        .expect("take the migration lock");
    let url = db.url().to_owned();
    let migrating = std::thread::spawn(move || {
        let mut config = StoreConfig::new(url);
        config.statement_timeout = std::time::Duration::from_millis(500);
        Store::open(&config).expect("open").migrate()
    });
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    assert!(!migrating.is_finished(), "the migration waits for the lock");
    holder
        .batch_execute(&format!("SELECT pg_advisory_unlock({LOCK})"))
        .expect("release");
    let applied = migrating
        .join()
        .expect("thread")
        .expect("migrated after the wait");
    assert_eq!(applied.len(), MIGRATIONS);
}

#[test]
fn processes_starting_together_on_a_new_sqlite_file_migrate_once() {
    let db = petstore_store::testing::TestDatabase::sqlite();
    let starters: Vec<_> = (0..6)
        .map(|_| {
            let url = db.url().to_owned();
            std::thread::spawn(move || Store::open(&StoreConfig::new(url)).expect("open").migrate())
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

#[test]
fn a_statement_past_the_timeout_is_cancelled_as_unavailable() {
    use diesel::connection::SimpleConnection;
    use diesel::{Connection, PgConnection};
    let Some(db) = petstore_store::testing::TestDatabase::postgres() else {
        return;
    };
    db.store();
    let mut config = StoreConfig::new(db.url());
    config.statement_timeout = std::time::Duration::from_millis(200);
    let store = Store::open(&config).expect("open");
    let mut holder = PgConnection::establish(db.url()).expect("connect");
    holder
        .batch_execute("BEGIN; LOCK TABLE pets IN ACCESS EXCLUSIVE MODE")
        .expect("lock the table");
    let started = std::time::Instant::now();
    let result = store.list_pets(&PetListQuery::default());
    assert!(unavailable(&result), "{result:?}");
    let error = result.as_ref().expect_err("timed out");
    assert!(
        matches!(store_error(error), StoreError::TimedOut(..)),
        "{error:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    holder.batch_execute("ROLLBACK").expect("unlock");
    assert!(
        store.list_pets(&PetListQuery::default()).is_ok(),
        "works again"
    );
}

for_each_backend! {
    fn reads_run_nonblocking_only_on_sqlite_and_only_with_an_idle_connection(db) {
        let store = db.store();
        let pet = store.create_pet(&draft("Inline", PetStatus::Sold)).expect("create");
        // One connection, none opened ahead of time: nothing is idle until a read returns one.
        let mut config = StoreConfig::new(db.url());
        config.pool_size = 1;
        config.keep_warm = false;
        let store = Store::open(&config).expect("open");
        let Some(view) = store.nonblocking() else {
            assert_eq!(store.backend_name(), "postgres", "SQLite offers a non-blocking view");
            return; // every PostgreSQL query is a network round trip: no call runs inline
        };
        assert_eq!(store.backend_name(), "sqlite");
        let refused = view.find_pet(pet.id);
        let error = refused.expect_err("no idle connection yet");
        assert_eq!(error.kind(), StorageErrorKind::WouldBlock, "{error:?}");
        assert!(matches!(store_error(&error), StoreError::NoIdleConnection));
        // An ordinary read still waits for (and opens) a connection, and leaves it idle.
        assert_eq!(store.find_pet(pet.id).expect("find"), Some(pet.clone()));
        assert_eq!(view.find_pet(pet.id).expect("idle connection"), Some(pet));
    }

    fn a_pet_handed_to_the_writer_is_answered_once_committed(db) {
        let store = db.store();
        let (sender, answer) = std::sync::mpsc::channel();
        let queued = store.queue_create_pet(draft("Queued", PetStatus::Pending), Box::new(move |result| {
            sender.send(result).expect("the test is waiting");
        }));
        if store.backend_name() == "sqlite" {
            assert!(queued.is_ok());
            let pet = answer.recv().expect("answered").expect("created");
            assert_eq!(pet.name, "Queued");
            assert_eq!(store.find_pet(pet.id).expect("find"), Some(pet), "committed before the answer");
        } else {
            assert!(queued.is_err(), "no writer on PostgreSQL: the callback comes back unused");
            assert!(answer.try_recv().is_err());
        }
    }
}

#[test]
fn a_write_that_waits_out_the_sqlite_lock_is_unavailable_not_a_fault() {
    use diesel::connection::SimpleConnection;
    use diesel::{Connection, SqliteConnection};
    let db = petstore_store::testing::TestDatabase::sqlite();
    db.store(); // migrated
    let mut config = StoreConfig::new(db.url());
    config.statement_timeout = std::time::Duration::from_millis(200);
    let store = Store::open(&config).expect("open");
    let (key, _) = store
        .create_key(&KeySpec::new(Plan::Free, "", None).expect("spec"))
        .expect("create key");
    // Another process holds SQLite's write lock (`petstore keys`, say).
    let mut holder = SqliteConnection::establish(db.url()).expect("connect");
    holder
        .batch_execute("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let created = store.create_pet(&draft("Waiting", PetStatus::Available));
    let banned = store.ban_key(
        key.id,
        Ban {
            until: u64::MAX,
            level: 1,
        },
        0,
    );
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
        .expect("writes work again");
}
