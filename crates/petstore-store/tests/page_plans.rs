//! Every page query on the index meant for it, whatever the data: the statements the store
//! really runs (recorded through Diesel's instrumentation as each connection sends them) are
//! explained by each backend's planner on a large, skewed catalogue (almost every pet
//! `available`, a few `pending`, no `sold`; one key with most orders, another with few; most
//! keys `pro` and active, a few `free`, revoked, expired or due to expire).
//! On PostgreSQL each is explained as a generic plan (as the service's connections run them)
//! and as a custom plan for its values; on SQLite with and without the planner's statistics.
//! The same record of statements (Diesel's instrumentation is set once per process, so the
//! tests that read it share this file) shows that a webhook claim reads its due deliveries in
//! their index's order, and what recording the usual webhook attempt sends: no read of the
//! delivery's row, and on PostgreSQL one statement.

use std::sync::{Mutex, Once};

use diesel::connection::{Instrumentation, InstrumentationEvent, set_default_instrumentation};
use petstore_domain::{
    ApiKeyRepository, KeyListQuery, KeySpec, KeyState, Limit, OrderListQuery, OrderRepository,
    OrderStatus, PageRequest, PetListQuery, PetRepository, PetStatus, Plan,
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
    statement_holding(table, "", call).await
}

/// The statement (SQL, binds) the store sent for `call`: the last one reading `table` whose SQL
/// holds `held`.
async fn statement_holding<T>(
    table: &str,
    held: &str,
    call: impl Future<Output = T>,
) -> (String, Vec<String>) {
    STATEMENTS.lock().expect("statements").clear();
    call.await;
    let statements = STATEMENTS.lock().expect("statements");
    // PostgreSQL quotes names with `"`, SQLite (in Diesel) with a backtick.
    let from = [format!("FROM \"{table}\""), format!("FROM `{table}`")];
    let sent = statements
        .iter()
        .rev()
        .find(|sql| {
            sql.starts_with("SELECT")
                && from.iter().any(|from| sql.contains(from))
                && sql.contains(held)
        })
        .unwrap_or_else(|| panic!("no SELECT from {table} among {statements:?}"));
    let (sql, binds) = sent.split_once(" -- binds: ").expect("binds");
    (sql.to_owned(), parse_binds(binds))
}

/// `["sold", 21, true, []]` (Diesel's debug form of the binds) as SQL literals: `'sold'`, `21`,
/// `true`, `'{}'` (an empty array).
fn parse_binds(binds: &str) -> Vec<String> {
    let inner = binds.trim().trim_start_matches('[').trim_end_matches(']');
    if inner.is_empty() {
        return Vec::new();
    }
    inner
        .split(", ")
        .map(|bind| match bind.strip_prefix('"') {
            Some(text) => format!("'{}'", text.trim_end_matches('"')),
            None if bind == "[]" => "'{}'".to_owned(),
            None if bind == "true" || bind == "false" => bind.to_owned(),
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
    status: Option<OrderStatus>,
    after: Option<i64>,
) -> (String, Vec<String>) {
    let query = OrderListQuery {
        page: page(20, after),
        owner,
        status,
    };
    statement_of("orders", async {
        store.list_orders(&query).await.expect("list")
    })
    .await
}

/// A page of keys (the admin API's), as the store sends it.
async fn keys_page(
    store: &Store,
    plan: Option<Plan>,
    state: Option<KeyState>,
    after: Option<i64>,
) -> (String, Vec<String>) {
    let query = KeyListQuery {
        page: page(20, after),
        plan,
        state,
        now: 1_900_000_000,
    };
    statement_of("api_keys", async {
        store.list_keys_page(&query).await.expect("list")
    })
    .await
}

/// A page statement the store sent, and what it must walk.
struct Expected {
    /// The statement's SQL and its binds (as SQL literals).
    statement: (String, Vec<String>),
    /// The table.
    table: &'static str,
    /// The index it must walk (`None`: the primary key).
    index: Option<&'static str>,
    /// The index's column before `id` that the page fixes (`status`, `plan`, ...), if any.
    leading: Option<&'static str>,
    /// Whether rows may be filtered as they are read (a key's state, judged at `now`).
    filtered: bool,
    /// An index of fewer rows a custom plan may read and sort instead (the keys of one state,
    /// of every plan; the orders of a rare status, of every key): a custom plan knows how few
    /// they are. With the column it then filters on (`plan`, `owner_key_id`).
    or_sorted: Option<(&'static str, &'static str)>,
}

/// The page statements of the store on `db`, seeded, with what each must walk.
async fn page_statements(db: &TestDatabase, seed: &str) -> (Store, Vec<Expected>) {
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
    db.execute(
        &seed
            .replace("{few}", &few.id.to_string())
            .replace("{many}", &many.id.to_string()),
    );
    let expect = |statement, table, index, leading, filtered| Expected {
        statement,
        table,
        index,
        leading,
        filtered,
        or_sorted: None,
    };
    let mut expected = Vec::new();
    // First pages, and deep ones (past 30,000 of the 50,000 pets, 10,000 of the 20,000 orders
    // and of the 20,000 keys).
    for deep in [false, true] {
        let after = deep.then_some(30_000);
        let statement = pets_page(&store, None, after).await;
        expected.push(expect(statement, "pets", None, None, false));
        for status in [PetStatus::Available, PetStatus::Pending, PetStatus::Sold] {
            let statement = pets_page(&store, Some(status), after).await;
            expected.push(expect(
                statement,
                "pets",
                Some("pets_status_id"),
                Some("status"),
                false,
            ));
        }
        let after = deep.then_some(10_000);
        let statement = orders_page(&store, None, None, after).await;
        expected.push(expect(statement, "orders", None, None, false));
        for status in [
            OrderStatus::Placed,
            OrderStatus::Approved,
            OrderStatus::Delivered,
            OrderStatus::Cancelled,
        ] {
            let statement = orders_page(&store, None, Some(status), after).await;
            expected.push(expect(
                statement,
                "orders",
                Some("orders_status_id"),
                Some("status"),
                false,
            ));
            for owner in [few.id, many.id] {
                let statement = orders_page(&store, Some(owner), Some(status), after).await;
                expected.push(Expected {
                    // A custom plan may read the few orders of a rare status and sort them.
                    or_sorted: Some(("orders_status_id", "owner_key_id")),
                    ..expect(
                        statement,
                        "orders",
                        Some("orders_owner_status_id"),
                        // Both columns fixed: SQLite's plan reads `(owner_key_id=? AND
                        // status=? AND id>?)`.
                        Some("owner_key_id=? AND status"),
                        false,
                    )
                });
            }
        }
        for owner in [few.id, many.id] {
            let statement = orders_page(&store, Some(owner), None, after).await;
            let index = Some("orders_owner_id");
            expected.push(expect(
                statement,
                "orders",
                index,
                Some("owner_key_id"),
                false,
            ));
        }
        for plan in [None, Some(Plan::Free), Some(Plan::Pro)] {
            // (state, its index, its index by plan, whether the walk filters what it reads)
            let states = [
                (None, None, "api_keys_plan_id", false),
                (
                    Some(KeyState::Revoked),
                    Some("api_keys_revoked_id"),
                    "api_keys_revoked_plan_id",
                    false,
                ),
                (Some(KeyState::Active), None, "api_keys_plan_id", true),
                (
                    Some(KeyState::Expired),
                    Some("api_keys_expiring_id"),
                    "api_keys_expiring_plan_id",
                    true,
                ),
            ];
            for (state, index, plan_index, filtered) in states {
                let statement = keys_page(&store, plan, state, after).await;
                let (index, leading, or_sorted) = match plan {
                    None => (index, None, None),
                    Some(_) => (
                        Some(plan_index),
                        Some("plan"),
                        index.map(|index| (index, "plan")),
                    ),
                };
                expected.push(Expected {
                    or_sorted,
                    ..expect(statement, "api_keys", index, leading, filtered)
                });
            }
        }
    }
    (store, expected)
}

/// 50,000 pets (0.2% pending, none sold), 20,000 orders (one in 1,000 the key with few; one
/// in 1,000 placed, one in 1,000 approved, the others delivered) and
/// 20,000 keys (0.5% free; 0.5% revoked; 1% expired, 1% due to expire), over `series`, a
/// table of `x` from 1 to `{n}`.
fn seed(series: &str) -> String {
    format!(
        "INSERT INTO pets (name, category_id, status, created_at) \
         SELECT 'pet ' || x, 1, CASE WHEN x % 500 = 0 THEN 'pending' ELSE 'available' END, 0 \
         FROM {pets}; \
         INSERT INTO orders (pet_id, quantity, status, created_at, owner_key_id) \
         SELECT x, 1, CASE x % 1000 WHEN 1 THEN 'placed' WHEN 2 THEN 'approved' \
                ELSE 'delivered' END, 0, CASE WHEN x % 1000 = 0 THEN {{few}} ELSE {{many}} END \
         FROM {rows}; \
         INSERT INTO api_keys (key_hash, display_prefix, plan, label, created_at, revoked_at, \
                               expires_at) \
         SELECT 'hash ' || x, 'prefix', CASE WHEN x % 200 = 1 THEN 'free' ELSE 'pro' END, 'seeded', 0, \
                CASE WHEN x % 200 = 2 THEN 1 END, \
                CASE x % 100 WHEN 3 THEN 1000 WHEN 4 THEN 2000000000 END \
         FROM {rows};",
        pets = series.replace("{n}", "50000"),
        rows = series.replace("{n}", "20000"),
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
    for expected in expected {
        let (sql, binds) = &expected.statement;
        let index = match expected.index {
            Some(index) => index.to_owned(),
            None => format!("{}_pkey", expected.table),
        };
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
            let walks = |index: &str| plan.contains(&format!("Index Scan using {index} "));
            let sorted = mode == "force_custom_plan"
                && expected.or_sorted.is_some_and(|(index, _)| walks(index));
            assert!(
                walks(&index) || sorted,
                "{mode}: {sql} {binds:?} should walk {index}:\n{plan}"
            );
            let filters_as_meant =
                plan.lines()
                    .filter(|line| line.contains("Filter:"))
                    .all(|line| {
                        expected.filtered
                            || sorted
                                && expected
                                    .or_sorted
                                    .is_some_and(|(_, column)| line.contains(column))
                    });
            assert!(
                !plan.contains("Seq Scan")
                    && (sorted || !plan.contains("Sort"))
                    && filters_as_meant,
                "{mode}: {sql} {binds:?} reads only its page:\n{plan}"
            );
        }
        explainer.execute("DEALLOCATE page").expect("deallocate");
    }
}

/// A claim reads only the due deliveries it takes, in the order of their index: none read to
/// be sorted, however many fell due at the same second (here 20,000, one endpoint's, as after a
/// burst of creates). Checked in the plan PostgreSQL chooses for a connection that has run the
/// statement as often as a sender's does (custom plans for its values: the generic plan, which
/// guesses that few rows are due, costs it more), and in a custom plan.
#[tokio::test]
async fn on_postgres_a_claim_reads_due_deliveries_in_their_index_order() {
    use petstore_domain::WebhookRepository;
    use petstore_store::testing::{an_operators_endpoint, claim_of_ten};
    let _serial = SERIAL.lock().await;
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    record_statements();
    let store = db.store().await;
    let endpoint = an_operators_endpoint(&store).await;
    db.execute(&format!(
        "INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, body, state, \
                                         attempts, tries, next_attempt_at, lease_token, \
                                         lease_until, created_at) \
         SELECT {}, 'evt_' || x, 'pet.created', '{{}}', 'pending', 0, 0, 1000, 0, 0, 1000 \
         FROM generate_series(1, 20000) AS x; ANALYZE;",
        endpoint.id
    ));
    let claim = claim_of_ten(3);
    let (sql, binds) = statement_holding("webhook_deliveries", "FOR UPDATE", async {
        let claimed = store.claim_webhook_deliveries(&claim).await.expect("claim");
        assert_eq!(claimed.len(), 10);
    })
    .await;
    let explainer = RawPostgres::connect(db.url()).expect("connect");
    explainer
        .execute(&format!("PREPARE claim AS {sql}"))
        .expect("prepare");
    let run = format!("EXECUTE claim({})", binds.join(", "));
    // Past the five runs after which PostgreSQL weighs a generic plan.
    for _ in 0..10 {
        explainer.execute(&run).expect("run");
    }
    for mode in ["auto", "force_custom_plan"] {
        let plan: Vec<String> = explainer
            .query(&format!("SET plan_cache_mode = {mode}; EXPLAIN {run}"))
            .expect("explain")
            .into_iter()
            .filter_map(|row| row.into_iter().next().flatten())
            .collect();
        let plan = plan.join("\n");
        assert!(
            plan.contains("Index Scan using webhook_deliveries_due ")
                && !plan.contains("Sort")
                && !plan.contains("Seq Scan on webhook_deliveries"),
            "{mode}: {sql} {binds:?} reads only what it takes:\n{plan}"
        );
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
            db.execute("ANALYZE");
        }
        for expected in &expected {
            let (sql, binds) = &expected.statement;
            let table = expected.table;
            // Every page bounds the id (`id > ?`) but the first of all pets (a plain scan in
            // id order, which stops at the page's end).
            let bounded = sql.contains(" > ?");
            let wanted = match (expected.index, expected.leading) {
                (None, _) if !bounded => format!("SCAN {table}"),
                (None, _) => format!("SEARCH {table} USING INTEGER PRIMARY KEY (rowid>?)"),
                (Some(index), Some(leading)) => {
                    format!("SEARCH {table} USING INDEX {index} ({leading}=? AND id>?)")
                }
                (Some(index), None) => format!("SEARCH {table} USING INDEX {index} (id>?)"),
            };
            assert_eq!(
                sqlite_plan(db.url(), sql),
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

/// The usual attempts (one delivered, one to be retried), recorded together by the store on
/// `db`: the statements sent. Each must be written without its delivery's row read first.
async fn statements_recording_usual_attempts(db: &TestDatabase) -> Vec<String> {
    use petstore_domain::webhook::{AttemptRecord, AttemptResult};
    use petstore_domain::{CreatePet, PetDraft, WebhookRepository};
    use petstore_store::testing::{an_operators_endpoint, claim_of_ten};
    record_statements();
    let store = db.store().await;
    an_operators_endpoint(&store).await;
    for name in ["Rex", "Tom"] {
        let draft = PetDraft::new(name, 1, PetStatus::Available).expect("valid draft");
        store.create_pet(&CreatePet::new(draft)).await.expect("pet");
    }
    let claim = claim_of_ten(7);
    let now = claim.now;
    let claimed = store.claim_webhook_deliveries(&claim).await.expect("claim");
    assert_eq!(claimed.len(), 2, "{claimed:?}");
    let records: Vec<AttemptRecord> = claimed
        .iter()
        .zip([
            (204, AttemptResult::Delivered),
            (503, AttemptResult::RetryAt(now + 600)),
        ])
        .map(|(due, (status, result))| AttemptRecord {
            delivery: due.id,
            lease: due.lease,
            attempted_at: now,
            status: Some(status),
            latency_ms: 5,
            error: None,
            result,
        })
        .collect();
    STATEMENTS.lock().expect("statements").clear();
    let recorded = store.record_webhook_attempts(&records).await;
    assert_eq!(recorded.expect("recorded"), vec![true, true]);
    let sent = STATEMENTS.lock().expect("statements").clone();
    let reads: Vec<&String> = sent
        .iter()
        .filter(|sql| sql.starts_with("SELECT") && sql.contains("webhook_deliveries"))
        .collect();
    assert!(
        reads.is_empty(),
        "the deliveries' rows read first: {sent:?}"
    );
    sent
}

/// How many of `statements` begin with `start`.
fn starting(statements: &[String], start: &str) -> usize {
    statements
        .iter()
        .filter(|sql| sql.starts_with(start))
        .count()
}

#[tokio::test]
async fn on_postgres_the_usual_attempt_is_recorded_in_one_statement() {
    let _serial = SERIAL.lock().await;
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let sent = statements_recording_usual_attempts(&db).await;
    assert_eq!(
        (
            starting(&sent, "WITH first AS (UPDATE \"webhook_deliveries\""),
            starting(&sent, "UPDATE"),
            starting(&sent, "INSERT"),
        ),
        (2, 0, 0),
        "the update and the attempt's row together, each attempt: {sent:?}"
    );
}

/// On SQLite and MariaDB (both quoting names with a backtick): an update and an insert each.
async fn recorded_in_two_statements(db: &TestDatabase) {
    let sent = statements_recording_usual_attempts(db).await;
    assert_eq!(
        (
            starting(&sent, "UPDATE `webhook_deliveries`"),
            starting(&sent, "INSERT INTO `webhook_attempts`"),
        ),
        (2, 2),
        "an update and the attempt's row, each attempt: {sent:?}"
    );
}

#[tokio::test]
async fn on_sqlite_the_usual_attempt_is_recorded_in_two_statements() {
    let _serial = SERIAL.lock().await;
    recorded_in_two_statements(&TestDatabase::sqlite()).await;
}

#[tokio::test]
async fn on_mariadb_the_usual_attempt_is_recorded_in_two_statements() {
    let _serial = SERIAL.lock().await;
    let Some(db) = TestDatabase::mysql() else {
        return;
    };
    recorded_in_two_statements(&db).await;
}
