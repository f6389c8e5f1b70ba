//! Every page query on the index meant for it, whatever the data: the statements the store
//! really runs (recorded through Diesel's instrumentation as each connection sends them) are
//! explained by each backend's planner on a large, skewed catalogue (almost every pet
//! `available`, a few `pending`, no `sold`; one key with most orders, another with few).
//! On PostgreSQL each is explained as a generic plan (as the service's connections run them)
//! and as a custom plan for its values; on SQLite with and without the planner's statistics.

use std::sync::{Mutex, Once};

use diesel::connection::{Instrumentation, InstrumentationEvent, set_default_instrumentation};
use petstore_domain::{
    ApiKeyRepository, KeySpec, Limit, OrderListQuery, OrderRepository, PageRequest, PetListQuery,
    PetRepository, PetStatus, Plan,
};
use petstore_store::Store;
use petstore_store::testing::{RawPostgres, TestDatabase};

/// Every statement sent by any connection of this test process, as `SQL -- binds: [...]`.
static STATEMENTS: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// One scenario at a time: they share [`STATEMENTS`].
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn record_statements() {
    static SET: Once = Once::new();
    SET.call_once(|| {
        fn recorder() -> Option<Box<dyn Instrumentation>> {
            Some(Box::new(|event: InstrumentationEvent<'_>| {
                if let InstrumentationEvent::StartQuery { query, .. } = event {
                    STATEMENTS
                        .lock()
                        .expect("statements")
                        .push(query.to_string());
                }
            }))
        }
        set_default_instrumentation(recorder).expect("instrumentation");
    });
}

/// The statement (SQL, binds) the store sent for `call`: the last one reading `table`.
async fn statement_of<T>(table: &str, call: impl Future<Output = T>) -> (String, Vec<String>) {
    STATEMENTS.lock().expect("statements").clear();
    call.await;
    let statements = STATEMENTS.lock().expect("statements");
    // PostgreSQL quotes names with `"`, SQLite (in Diesel) with a backtick.
    let from = [format!("FROM \"{table}\""), format!("FROM `{table}`")];
    let sent = statements
        .iter()
        .rev()
        .find(|sql| sql.starts_with("SELECT") && from.iter().any(|from| sql.contains(from)))
        .unwrap_or_else(|| panic!("no SELECT from {table} among {statements:?}"));
    let (sql, binds) = sent.split_once(" -- binds: ").expect("binds");
    (sql.to_owned(), parse_binds(binds))
}

/// `["sold", 21]` (Diesel's debug form of the binds) as SQL literals: `'sold'`, `21`.
fn parse_binds(binds: &str) -> Vec<String> {
    let inner = binds.trim().trim_start_matches('[').trim_end_matches(']');
    if inner.is_empty() {
        return Vec::new();
    }
    inner
        .split(", ")
        .map(|bind| match bind.strip_prefix('"') {
            Some(text) => format!("'{}'", text.trim_end_matches('"')),
            None => {
                assert!(bind.parse::<i64>().is_ok(), "an integer bind: {bind}");
                bind.to_owned()
            }
        })
        .collect()
}

fn page(limit: u32, after: Option<i64>) -> PageRequest {
    PageRequest {
        limit: Limit::new(limit).expect("limit"),
        after,
    }
}

/// A page of pets, as the store sends it.
async fn pets_page(
    store: &Store,
    status: Option<PetStatus>,
    after: Option<i64>,
) -> (String, Vec<String>) {
    let query = PetListQuery {
        page: page(20, after),
        status,
    };
    statement_of("pets", async {
        store.list_pets(&query).await.expect("list")
    })
    .await
}

/// A page of orders, as the store sends it.
async fn orders_page(
    store: &Store,
    owner: Option<i64>,
    after: Option<i64>,
) -> (String, Vec<String>) {
    let query = OrderListQuery {
        page: page(20, after),
        owner,
    };
    statement_of("orders", async {
        store.list_orders(&query).await.expect("list")
    })
    .await
}

/// What each page query must use: (the store's statement, the index, what the plan may not
/// contain).
type Expectation = ((String, Vec<String>), &'static str);

/// The page statements of the store on `db`, seeded, with the index each must walk.
async fn page_statements(db: &TestDatabase, seed: &str) -> (Store, Vec<Expectation>) {
    record_statements();
    let store = db.store().await;
    let (few, _) = store
        .create_key(&KeySpec::new(Plan::Free, "few orders", None).expect("spec"))
        .await
        .expect("key");
    let (many, _) = store
        .create_key(&KeySpec::new(Plan::Pro, "many orders", None).expect("spec"))
        .await
        .expect("key");
    raw_execute(
        db,
        &seed
            .replace("{few}", &few.id.to_string())
            .replace("{many}", &many.id.to_string()),
    );
    let mut expected = Vec::new();
    // First pages, and deep ones (past 30,000 of the 50,000 pets, 10,000 of the 20,000 orders).
    for deep in [false, true] {
        let after = deep.then_some(30_000);
        expected.push((pets_page(&store, None, after).await, "pets primary key"));
        for status in [PetStatus::Available, PetStatus::Pending, PetStatus::Sold] {
            expected.push((
                pets_page(&store, Some(status), after).await,
                "pets_status_id",
            ));
        }
        let after = deep.then_some(10_000);
        expected.push((orders_page(&store, None, after).await, "orders primary key"));
        for owner in [few.id, many.id] {
            expected.push((
                orders_page(&store, Some(owner), after).await,
                "orders_owner_id",
            ));
        }
    }
    (store, expected)
}

fn raw_execute(db: &TestDatabase, sql: &str) {
    if db.url().starts_with("postgres") {
        RawPostgres::connect(db.url())
            .expect("connect")
            .execute(sql)
            .expect("seed");
    } else {
        use diesel::connection::SimpleConnection;
        use diesel::{Connection, SqliteConnection};
        SqliteConnection::establish(db.url())
            .expect("connect")
            .batch_execute(sql)
            .expect("seed");
    }
}

/// 50,000 pets (0.2% pending, none sold) and 20,000 orders (one in 1,000 the key with few).
fn seed(series: &str) -> String {
    format!(
        "INSERT INTO pets (name, category_id, status, created_at) \
         SELECT 'pet ' || x, 1, CASE WHEN x % 500 = 0 THEN 'pending' ELSE 'available' END, 0 \
         FROM {pets}; \
         INSERT INTO orders (pet_id, quantity, status, created_at, owner_key_id) \
         SELECT x, 1, 'placed', 0, CASE WHEN x % 1000 = 0 THEN {{few}} ELSE {{many}} END \
         FROM {orders};",
        pets = series.replace("{n}", "50000"),
        orders = series.replace("{n}", "20000"),
    )
}

#[tokio::test]
async fn on_postgres_each_page_walks_its_index_in_generic_and_custom_plans() {
    let _serial = SERIAL.lock().await;
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let seed = seed("generate_series(1, {n}) AS x") + "ANALYZE;";
    let (_store, expected) = page_statements(&db, &seed).await;
    let explainer = RawPostgres::connect(db.url()).expect("connect");
    for ((sql, binds), index) in expected {
        let index = index.replace(" primary key", "_pkey");
        explainer
            .execute(&format!("PREPARE page AS {sql}"))
            .expect("prepare");
        for mode in ["force_generic_plan", "force_custom_plan"] {
            let plan: Vec<String> = explainer
                .query(&format!(
                    "SET plan_cache_mode = {mode}; EXPLAIN EXECUTE page({})",
                    binds.join(", ")
                ))
                .expect("explain")
                .into_iter()
                .filter_map(|row| row.into_iter().next().flatten())
                .collect();
            let plan = plan.join("\n");
            assert!(
                plan.contains(&format!("Index Scan using {index} ")),
                "{mode}: {sql} {binds:?} should walk {index}:\n{plan}"
            );
            assert!(
                !plan.contains("Sort") && !plan.contains("Seq Scan") && !plan.contains("Filter"),
                "{mode}: {sql} {binds:?} reads only its page:\n{plan}"
            );
        }
        explainer.execute("DEALLOCATE page").expect("deallocate");
    }
}

#[tokio::test]
async fn on_sqlite_each_page_walks_its_index_with_and_without_statistics() {
    let _serial = SERIAL.lock().await;
    let db = TestDatabase::sqlite();
    let seed = seed(
        "(WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < {n}) \
         SELECT x FROM s)",
    );
    let (_store, expected) = page_statements(&db, &seed).await;
    for statistics in [false, true] {
        if statistics {
            raw_execute(&db, "ANALYZE");
        }
        for ((sql, binds), index) in &expected {
            let plan = sqlite_plan(db.url(), sql);
            let wanted = match (*index, sql.contains(" > ?")) {
                ("pets primary key", false) => "SCAN pets".to_owned(),
                ("orders primary key", false) => "SCAN orders".to_owned(),
                (table_key, true) if table_key.ends_with("primary key") => format!(
                    "SEARCH {} USING INTEGER PRIMARY KEY (rowid>?)",
                    table_key.trim_end_matches(" primary key")
                ),
                ("pets_status_id", false) => {
                    "SEARCH pets USING INDEX pets_status_id (status=?)".into()
                }
                ("pets_status_id", true) => {
                    "SEARCH pets USING INDEX pets_status_id (status=? AND id>?)".into()
                }
                ("orders_owner_id", after) => format!(
                    "SEARCH orders USING INDEX orders_owner_id (owner_key_id=?{})",
                    if after { " AND id>?" } else { "" }
                ),
                other => panic!("no expectation for {other:?}"),
            };
            assert_eq!(
                plan,
                vec![wanted],
                "{sql} {binds:?} (statistics: {statistics})"
            );
        }
    }
}

/// SQLite's `EXPLAIN QUERY PLAN` of `sql`: one line per step.
fn sqlite_plan(url: &str, sql: &str) -> Vec<String> {
    use diesel::{Connection, RunQueryDsl, SqliteConnection};
    #[derive(diesel::QueryableByName)]
    struct Step {
        #[diesel(sql_type = diesel::sql_types::Text)]
        detail: String,
    }
    let steps: Vec<Step> = diesel::sql_query(format!("EXPLAIN QUERY PLAN {sql}"))
        .load(&mut SqliteConnection::establish(url).expect("connect"))
        .expect("explain");
    steps.into_iter().map(|step| step.detail).collect()
}
