//! The inventory's counters: exact after concurrent creates, orders, cancellations and deliveries
//! on several instances of the store at once, and filled for the data a database already held.

use std::collections::HashMap;

use petstore_domain::{
    CreatePet, Inventory, Limit, OrderAction, OrderError, OrderListQuery, OrderRepository,
    PageRequest, PetDraft, PetListQuery, PetRepository, PetStatus, PlaceOrder,
};
use petstore_store::for_each_backend;
use petstore_store::testing::{RawPostgres, TestDatabase};
use petstore_store::{Store, StoreConfig};

/// How many pets have each status, counted row by row past the store.
fn counted(url: &str) -> Inventory {
    read_counts(
        url,
        "SELECT status, COUNT(*) AS count FROM pets GROUP BY status",
    )
}

/// An inventory from `sql`'s rows of (status, count).
fn read_counts(url: &str, sql: &str) -> Inventory {
    let rows: Vec<(String, i64)> = if url.starts_with("postgres") {
        RawPostgres::connect(url)
            .expect("connect")
            .query(sql)
            .expect("count")
            .into_iter()
            .map(|row| {
                let text = |i: usize| row[i].clone().expect("not null");
                (text(0), text(1).parse().expect("a count"))
            })
            .collect()
    } else {
        use diesel::{Connection, RunQueryDsl, SqliteConnection};
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Text)]
            status: String,
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            count: i64,
        }
        let rows: Vec<Row> = diesel::sql_query(sql)
            .load(&mut SqliteConnection::establish(url).expect("connect"))
            .expect("count");
        rows.into_iter()
            .map(|row| (row.status, row.count))
            .collect()
    };
    let counts: HashMap<String, u64> = rows
        .into_iter()
        .map(|(status, count)| (status, u64::try_from(count).expect("a count")))
        .collect();
    let of = |status: &str| counts.get(status).copied().unwrap_or(0);
    Inventory {
        available: of("available"),
        pending: of("pending"),
        sold: of("sold"),
    }
}

/// The counters' sums, read past the store.
fn kept(url: &str) -> Inventory {
    let sql = "SELECT status, CAST(SUM(pets) AS BIGINT) AS count FROM pet_status_counts \
               GROUP BY status";
    read_counts(url, sql)
}

/// How many pets the paged list shows with `status`.
async fn listed(store: &Store, status: PetStatus) -> u64 {
    let mut count = 0;
    let mut after = None;
    loop {
        let page = store
            .list_pets(&PetListQuery {
                page: PageRequest {
                    limit: Limit::new(100).expect("limit"),
                    after,
                },
                status: Some(status),
            })
            .await
            .expect("list");
        count += page.items.len() as u64;
        match page.next_after {
            Some(next) => after = Some(next),
            None => return count,
        }
    }
}

/// One instance's share of the work: creates pets, orders some of them and some of the other
/// instances' (pets another thread may be ordering at the same moment), then cancels or
/// delivers some of its orders.
async fn churn(store: &Store, instance: usize, thread: usize) {
    for round in 0..10 {
        let mut created = Vec::new();
        for i in 0..4 {
            let status = [PetStatus::Available, PetStatus::Pending, PetStatus::Sold][i % 3];
            let draft = PetDraft::new(format!("i{instance} t{thread} r{round} p{i}"), 1, status)
                .expect("draft");
            created.push(
                store
                    .create_pet(&CreatePet::new(draft))
                    .await
                    .expect("create"),
            );
        }
        // The newest pets of every instance: ordering them races the other threads.
        let newest = store
            .list_pets(&PetListQuery {
                page: PageRequest {
                    limit: Limit::new(100).expect("limit"),
                    after: None,
                },
                status: Some(PetStatus::Available),
            })
            .await
            .expect("list");
        let targets = created
            .iter()
            .map(|pet| pet.id)
            .chain(newest.items.iter().rev().take(3).map(|pet| pet.id));
        for (n, pet_id) in targets.enumerate() {
            let order = PlaceOrder {
                pet_id,
                owner: None,
                completion: None,
            };
            let placed = match store.place_order(&order).await {
                Ok(placed) => placed,
                // Not available (its status, or another thread took it first): refused.
                Err(OrderError::Refused(_)) => continue,
                Err(error) => panic!("place: {error:?}"),
            };
            let actions: &[OrderAction] = match (n + round) % 3 {
                0 => &[OrderAction::Cancel],
                1 => &[OrderAction::Approve, OrderAction::Deliver],
                _ => &[],
            };
            for &action in actions {
                store
                    .change_order(placed.id, None, action)
                    .await
                    .unwrap_or_else(|error| panic!("{action:?}: {error:?}"));
            }
        }
    }
}

async fn the_inventory_is_exact_after_concurrent_changes_on_several_instances(db: &TestDatabase) {
    db.store().await;
    // Three instances, each with three threads as three server workers.
    let threads: Vec<_> = (0..3)
        .flat_map(|instance| {
            let mut config = StoreConfig::new(db.url());
            config.workers = 3;
            config.pool_size = 3;
            let store = Store::open(&config).expect("open");
            (0..3).map(move |thread| {
                let store = store.clone();
                std::thread::spawn(move || {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("runtime")
                        .block_on(churn(&store, instance, thread));
                })
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("thread");
    }
    let store = db.store().await;
    let inventory = store.inventory().await.expect("inventory");
    assert_eq!(
        inventory,
        counted(db.url()),
        "the counters against COUNT(*)"
    );
    assert_eq!(
        inventory.available + inventory.pending + inventory.sold,
        9 * 10 * 4,
        "every pet created is counted once"
    );
    assert!(
        inventory.pending > 0 && inventory.sold > 0,
        "the orders moved pets: {inventory:?}"
    );
    for (status, count) in [
        (PetStatus::Available, inventory.available),
        (PetStatus::Pending, inventory.pending),
        (PetStatus::Sold, inventory.sold),
    ] {
        assert_eq!(
            listed(&store, status).await,
            count,
            "{status:?} pets listed"
        );
    }
    let orders = store
        .list_orders(&OrderListQuery {
            page: PageRequest {
                limit: Limit::new(100).expect("limit"),
                after: None,
            },
            owner: None,
            status: None,
        })
        .await
        .expect("orders");
    assert!(!orders.items.is_empty());
}

for_each_backend!(the_inventory_is_exact_after_concurrent_changes_on_several_instances);

/// The migrations of `backend` (`sqlite`, `postgres`), oldest first: (name, up.sql).
fn migrations(backend: &str) -> Vec<(String, String)> {
    petstore_store::testing::migration_folders(backend)
        .into_iter()
        .map(|(name, path)| {
            let up = std::fs::read_to_string(path.join("up.sql")).expect("up.sql");
            (name, up)
        })
        .collect()
}

/// The counters' migration counts the pets a database already holds, then keeps counting.
async fn the_counters_migration_counts_the_pets_already_there(db: &TestDatabase) {
    let postgres = db.url().starts_with("postgres");
    let execute = |sql: &str| db.execute(sql);
    let all = migrations(if postgres { "postgres" } else { "sqlite" });
    let counters = all
        .iter()
        .position(|(name, _)| name.ends_with("_pet_status_counts"))
        .expect("the counters' migration");
    for (_, up) in &all[..counters] {
        execute(up);
    }
    execute(
        "INSERT INTO pets (name, category_id, status, created_at) VALUES \
         ('a', 1, 'available', 0), ('b', 1, 'available', 0), ('c', 1, 'sold', 0), \
         ('d', 1, 'pending', 0), ('e', 1, 'sold', 0), ('f', 1, 'sold', 0)",
    );
    execute(&all[counters].1);
    let expected = Inventory {
        available: 2,
        pending: 1,
        sold: 3,
    };
    assert_eq!(counted(db.url()), expected);
    assert_eq!(
        kept(db.url()),
        expected,
        "the counters the migration filled"
    );
    // Past the store as well: any writer's changes are counted (and the store reads them).
    execute(
        "INSERT INTO pets (name, category_id, status, created_at) VALUES ('g', 1, 'pending', 0); \
         UPDATE pets SET status = 'available' WHERE name = 'c'; \
         DELETE FROM pets WHERE name = 'e'",
    );
    for (_, up) in &all[counters + 1..] {
        execute(up);
    }
    // The store reads them (opened on the database as the migrations left it).
    let store = Store::open(&StoreConfig::new(db.url())).expect("open");
    let inventory = store.inventory().await.expect("inventory");
    assert_eq!(
        inventory,
        Inventory {
            available: 3,
            pending: 2,
            sold: 1,
        }
    );
    assert_eq!(inventory, counted(db.url()));
}

for_each_backend!(the_counters_migration_counts_the_pets_already_there);
