//! MariaDB's own: changes given up on while they wait, stores migrating together, connections
//! the server closes.

use diesel_async::{AsyncConnection, AsyncMysqlConnection, RunQueryDsl};
use futures_util::future::BoxFuture;

use super::*;

/// Runs `work` on a MariaDB connection of its own to `url`, on a thread and runtime of its own
/// (never waiting on the test's): its thread's handle.
fn on_own_session<T: Send + 'static>(
    url: &str,
    work: impl for<'c> FnOnce(&'c mut AsyncMysqlConnection) -> BoxFuture<'c, T> + Send + 'static,
) -> std::thread::JoinHandle<T> {
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
                work(&mut conn).await
            })
    })
}

/// A MariaDB session of the test's own, on a thread of its own, that runs `sql` (a transaction
/// it opens and leaves open: holding rows) and closes when `release` is sent.
fn mariadb_holder(url: &str, sql: &str) -> std::sync::mpsc::Sender<()> {
    use diesel_async::SimpleAsyncConnection;
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (ready, holding) = std::sync::mpsc::channel::<()>();
    let sql = sql.to_owned();
    on_own_session(url, move |conn| {
        Box::pin(async move {
            conn.batch_execute(&sql).await.expect("hold the rows");
            ready.send(()).expect("ready");
            let _ = tokio::task::spawn_blocking(move || released.recv()).await;
            conn.batch_execute("ROLLBACK").await.expect("release");
        })
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
    let (store, pet, order) = a_placed_order_waiting_long(db.url()).await;
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
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    let sql = format!("SELECT CAST(({sql}) AS SIGNED) AS count");
    on_own_session(url, move |conn| {
        Box::pin(async move {
            let row: Count = diesel::sql_query(sql)
                .get_result(conn)
                .await
                .expect("count");
            row.count
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
    #[derive(diesel::QueryableByName)]
    struct Id {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        id: i64,
    }
    let sql = format!(
        "SELECT CAST(id AS SIGNED) AS id FROM information_schema.PROCESSLIST \
         WHERE db = '{name}' AND id <> CONNECTION_ID()"
    );
    on_own_session(url, move |conn| {
        Box::pin(async move {
            let rows: Vec<Id> = diesel::sql_query(sql).load(conn).await.expect("ids");
            rows.into_iter().map(|row| row.id).collect()
        })
    })
    .join()
    .expect("ids thread")
}
