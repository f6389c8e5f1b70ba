//! The store's own behaviour, each scenario run once per backend: what the conformance kit
//! (`petstore-conformance`, run at the end of this file on SQLite, PostgreSQL, PostgreSQL
//! through PgBouncer keeping prepared statements or not, and MariaDB) cannot see through the
//! storage interface alone: corrupt rows, the hashes as stored, threads with pools of their
//! own, migrations, reopening, outages, timeouts.
//! Here the scenarios every backend runs; in `store/` the clock, the failures, the migrations
//! and PostgreSQL's connections, and MariaDB's own.

#[path = "store/clock.rs"]
mod clock;
#[path = "store/failures.rs"]
mod failures;
#[path = "store/mariadb.rs"]
mod mariadb;
#[path = "store/migrations.rs"]
mod migrations;

use std::collections::HashSet;

use petstore_domain::{
    ApiKeyRepository, ApiKeySecret, Ban, CreatePet, KeySpec, Limit, OrderAction, OrderError,
    OrderRepository, OrderStatus, PageRequest, Pet, PetDraft, PetListQuery, PetRepository,
    PetStatus, PlaceOrder, Plan, Storage, StorageError, StorageErrorKind,
};
use petstore_store::for_each_backend;
use petstore_store::testing::{RawPostgres, TestDatabase, an_operators_endpoint, claim_of_ten};
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
const MIGRATIONS: usize = 12;

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

/// A store on `url` whose statements may run (or wait for a lock) a minute, migrated, with a pet
/// and an order placed for it: for changes given up on while they wait.
async fn a_placed_order_waiting_long(url: &str) -> (Store, Pet, petstore_domain::Order) {
    let mut config = StoreConfig::new(url);
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
    (store, pet, order)
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

/// A pet and its event's deliveries are written together or not at all (on PostgreSQL one
/// statement writes both): a delivery the database refuses leaves no pet, and the next create
/// is stored whole, its event delivered under its own id.
async fn a_pet_and_its_event_are_written_together_or_not_at_all(db: &TestDatabase) {
    use petstore_domain::WebhookRepository;
    use petstore_domain::webhook::EndpointOwner;
    let store = db.store().await;
    let endpoint = an_operators_endpoint(&store).await;
    let postgres = db.url().starts_with("postgres");
    db.execute(if postgres {
        "ALTER TABLE webhook_deliveries ADD CONSTRAINT refused CHECK (event_id = '') NOT VALID"
    } else {
        "CREATE TRIGGER refused BEFORE INSERT ON webhook_deliveries \
         BEGIN SELECT RAISE(ABORT, 'refused'); END"
    });
    let refused = store.create_pet(&draft("Rex", PetStatus::Available)).await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(
        walk(&store, 10, None).await,
        Vec::<i64>::new(),
        "no pet kept"
    );

    db.execute(if postgres {
        "ALTER TABLE webhook_deliveries DROP CONSTRAINT refused"
    } else {
        "DROP TRIGGER refused"
    });
    let pet = add(&store, "Tom", PetStatus::Available).await;
    assert_eq!(walk(&store, 10, None).await, [pet.id]);
    assert_eq!(store.find_pet(pet.id).await.expect("find"), Some(pet));
    let first = PageRequest {
        limit: Limit::new(10).expect("valid limit"),
        after: None,
    };
    let deliveries = store
        .list_webhook_deliveries(endpoint.id, EndpointOwner::Operator, first)
        .await
        .expect("list")
        .expect("the endpoint's");
    assert_eq!(deliveries.items.len(), 1, "{deliveries:?}");
}

for_each_backend!(
    a_pet_stored_with_an_unknown_status_is_reported_as_corrupt,
    a_pet_and_its_event_are_written_together_or_not_at_all,
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
        use petstore_store::testing::PooledStatements;
        async fn fresh() -> Option<super::Fresh> {
            super::fresh(super::TestDatabase::postgres_through_pgbouncer(
                PooledStatements::NotKept,
            ))
            .await
        }
        super::conformance_tests!(fresh);
    }

    mod pgbouncer_keeping_statements {
        use petstore_store::testing::PooledStatements;
        async fn fresh() -> Option<super::Fresh> {
            super::fresh(super::TestDatabase::postgres_through_pgbouncer(
                PooledStatements::Kept,
            ))
            .await
        }
        super::conformance_tests!(fresh);
    }
}
