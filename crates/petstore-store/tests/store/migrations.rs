//! Migrations on every backend (the same set, applied once by processes starting together,
//! waiting for the lock), and PostgreSQL's connections, read URLs and a transaction pooler.

use super::*;

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

/// `pooler=transaction-prepared` through a pooler that keeps no prepared statements is refused
/// as each connection opens, naming the fix (a call answers unavailable), instead of a call
/// failing now and then on a statement prepared on another server connection. With read URLs,
/// the role must give `synchronous_commit = remote_apply`, which the service cannot set itself
/// through such a pooler: refused without it, served with it.
#[tokio::test]
async fn a_pooler_said_to_keep_statements_is_checked_as_each_connection_opens() {
    use petstore_store::testing::PooledStatements;
    let Some(db) = TestDatabase::postgres_through_pgbouncer(PooledStatements::NotKept) else {
        return;
    };
    db.store().await.close();
    let said = db
        .url()
        .replace("pooler=transaction", "pooler=transaction-prepared");
    let store = Store::open(&StoreConfig::new(&said)).expect("open is lazy");
    for _ in 0..2 {
        // Twice: no connection is kept after its refusal; the next one is checked again.
        let refused = store.find_pet(1).await.expect_err("refused");
        assert_eq!(refused.kind(), StorageErrorKind::Unavailable, "{refused:?}");
        let chain = petstore_domain::error::Chain(&refused).to_string();
        assert!(chain.contains("max_prepared_statements"), "{chain}");
        assert!(chain.contains("pooler=transaction`"), "{chain}");
    }
    store.close();

    let Some(db) = TestDatabase::postgres_through_pgbouncer(PooledStatements::Kept) else {
        return;
    };
    db.store().await.close();
    let mut config = StoreConfig::new(db.url());
    config.read_urls = vec![db.direct_url().to_owned()];
    let store = Store::open(&config).expect("open is lazy");
    let refused = store.find_pet(1).await.expect_err("refused");
    let chain = petstore_domain::error::Chain(&refused).to_string();
    assert!(chain.contains("remote_apply"), "{chain}");
    store.close();

    // Set before the pooler opens a session to it (a session takes it as it starts).
    let Some(db) = TestDatabase::postgres_through_pgbouncer(PooledStatements::Kept) else {
        return;
    };
    let name = db
        .direct_url()
        .rsplit('/')
        .next()
        .and_then(|rest| rest.split('?').next())
        .expect("a database name");
    RawPostgres::connect(db.direct_url())
        .expect("connect")
        .execute(&format!(
            "ALTER DATABASE {name} SET synchronous_commit = remote_apply"
        ))
        .expect("set it on the database");
    db.store().await.close();
    let mut config = StoreConfig::new(db.url());
    config.read_urls = vec![db.direct_url().to_owned()];
    let store = Store::open(&config).expect("open is lazy");
    let found = store.find_pet(1).await;
    assert!(
        matches!(found, Ok(None)),
        "served once the role gives remote_apply: {found:?}"
    );
    store.close();
}

/// `pooler=transaction` through a pooler that keeps statements (PgBouncer keeps 200 unless told
/// otherwise since 1.24: what an upgrade of the pooler alone gives) works as well, beside a
/// `pooler=transaction-prepared` client on the same server connection (one, so that each
/// client's calls meet the other's): the per-call client's `DEALLOCATE ALL` makes the pooler
/// forget what it prepared there (PgBouncer 1.22 and later), and the other client's statements
/// are prepared again as it uses them.
#[tokio::test]
async fn both_pooler_modes_share_a_pooler_that_keeps_statements() {
    use petstore_store::testing::PooledStatements;
    let Some(db) = TestDatabase::postgres_through_pgbouncer_with(PooledStatements::Kept, 1) else {
        return;
    };
    let keeping = db.store().await;
    let per_call = db
        .url()
        .replace("pooler=transaction-prepared", "pooler=transaction");
    let per_call = Store::open(&StoreConfig::new(&per_call)).expect("open is lazy");
    let pet = add(&keeping, "Rex", PetStatus::Available).await;
    for round in 0..20 {
        for store in [&keeping, &per_call] {
            let found = store.find_pet(pet.id).await;
            assert!(
                matches!(found, Ok(Some(ref found)) if found.id == pet.id),
                "round {round}: {found:?}"
            );
        }
    }
    keeping.close();
    per_call.close();
}
