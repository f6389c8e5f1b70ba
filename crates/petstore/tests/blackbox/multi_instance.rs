//! Many stateless instances on one PostgreSQL database: two real `petstore` processes, written
//! to concurrently, must agree on every pet and every key. Skipped loudly without PostgreSQL
//! outside CI; fails in CI.

use std::collections::HashSet;
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{TestServer, agent, get, post, run};
use petstore_domain::Storage;
use petstore_store::testing::{PooledStatements, TestDatabase};

const CLIENTS: usize = 8;
const POSTS_PER_CLIENT: usize = 500;

/// Every id listed by following `next` links from `/pets?limit=100` on `base`.
fn list_all(base: &str, key: &str) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut url = format!("{base}/pets?limit=100");
    loop {
        let mut response = agent()
            .get(&url)
            .header("Authorization", format!("Bearer {key}"))
            .call()
            .expect("GET");
        assert_eq!(response.status().as_u16(), 200);
        let next = response
            .headers()
            .get("link")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(">; rel=\"next\""))
            .map(|(target, _)| target.trim_start_matches('<').to_owned());
        let page: serde_json::Value =
            serde_json::from_str(&response.body_mut().read_to_string().expect("body"))
                .expect("JSON");
        ids.extend(
            page.as_array()
                .expect("array")
                .iter()
                .map(|p| p["id"].as_i64().expect("id")),
        );
        match next {
            Some(next) => url = next,
            None => return ids,
        }
    }
}

#[test]
fn two_instances_on_one_database_lose_and_duplicate_nothing() {
    if let Some(db) = TestDatabase::postgres() {
        two_instances_lose_and_duplicate_nothing(&db);
    }
}

/// The same on one MariaDB database.
#[test]
fn two_instances_on_one_mariadb_database_lose_and_duplicate_nothing() {
    if let Some(db) = TestDatabase::mysql() {
        two_instances_lose_and_duplicate_nothing(&db);
    }
}

/// The same through PgBouncer pooling transactions (two server connections for both
/// instances' sixteen-odd clients): migrated straight (`migrate` needs a session), served with
/// `--no-migrate` and `pooler=transaction`.
#[test]
fn two_instances_through_a_transaction_pooler_lose_and_duplicate_nothing() {
    if let Some(db) = TestDatabase::postgres_through_pgbouncer(PooledStatements::NotKept) {
        run(db.direct_url(), &["migrate"]);
        two_instances_lose_and_duplicate_nothing(&db);
    }
}

/// The same through a PgBouncer that keeps prepared statements (`pooler=transaction-prepared`):
/// both processes name theirs alike (`s0`, `s1`, ...) and prepare them on the same two server
/// connections, which the pooler keeps apart.
#[test]
fn two_instances_through_a_pooler_keeping_statements_lose_and_duplicate_nothing() {
    if let Some(db) = TestDatabase::postgres_through_pgbouncer(PooledStatements::Kept) {
        run(db.direct_url(), &["migrate"]);
        two_instances_lose_and_duplicate_nothing(&db);
    }
}

fn two_instances_lose_and_duplicate_nothing(db: &TestDatabase) {
    let url = db.url().to_owned();
    let key = crate::common::enterprise_key(db.direct_url(), 1_000_000, 100_000_000);
    let first = TestServer::start(&url, &["--bootstrap-key=false", "--no-migrate"]);
    let second = TestServer::start(&url, &["--bootstrap-key=false", "--no-migrate"]);
    let bases = [first.base.clone(), second.base.clone()];

    let workers: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let base = bases[client % 2].clone();
            let key = key.clone();
            thread::spawn(move || {
                (0..POSTS_PER_CLIENT)
                    .map(|i| {
                        let body =
                            format!(r#"{{"name":"c{client} p{i}","categoryId":{}}}"#, client + 1);
                        let (status, pet) = post(&base, &key, &body);
                        assert_eq!(status, 201, "{pet}");
                        pet["id"].as_i64().expect("id")
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let created: Vec<i64> = workers
        .into_iter()
        .flat_map(|w| w.join().expect("client thread"))
        .collect();
    assert_eq!(created.len(), CLIENTS * POSTS_PER_CLIENT);
    let unique: HashSet<i64> = created.iter().copied().collect();
    assert_eq!(unique.len(), created.len(), "every 201 has its own id");

    let mut expected: Vec<i64> = unique.into_iter().collect();
    expected.sort_unstable();
    for base in &bases {
        let listed = list_all(base, &key);
        assert_eq!(
            listed, expected,
            "{base} lists every pet exactly once, ascending"
        );
    }

    // A key revoked once stops working on every instance within the key-cache period (1 s).
    run(&url, &["keys", "revoke", "1"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    for base in &bases {
        loop {
            let (status, _) = get(base, "/pets?limit=1", &key);
            if status == 401 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{base} still accepts a revoked key"
            );
            thread::sleep(Duration::from_millis(100));
        }
    }
    first.stop();
    second.stop();
}

#[actix_web::test]
async fn instances_starting_together_migrate_once() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let url = db.url().to_owned();
    let starters: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            thread::spawn(move || run(&url, &["migrate"]))
        })
        .collect();
    for starter in starters {
        starter.join().expect("migrate thread");
    }
    let store = db.store().await;
    assert_eq!(
        store.migrate().await.expect("migrate"),
        Vec::<String>::new()
    );
    store.check_ready().await.expect("ready");
}

/// What once failed: `keys create` on PostgreSQL died at exit (a libpq connection closed on
/// another thread while exit() ran) after creating its key, so a script retried and made two.
/// Every command and the server now close their connections and join their threads first.
#[test]
fn commands_and_servers_on_postgres_exit_cleanly_every_time() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let url = db.url().to_owned();
    run(&url, &["migrate"]);
    for _ in 0..20 {
        let key = run(&url, &["keys", "create", "--plan", "free"]);
        assert!(key.trim().starts_with("pst_"), "{key}");
    }
    let listed = run(&url, &["keys", "list", "--format", "json"]);
    let listed: Vec<serde_json::Value> = serde_json::from_str(&listed).expect("JSON");
    assert_eq!(listed.len(), 20, "one key per command, none twice");

    let key = crate::common::unlimited_key(&url);
    let mut server = TestServer::start(&url, &["--bootstrap-key=false", "--shutdown-delay", "0s"]);
    for _ in 0..20 {
        let (status, _) = server.list_pets("", &key);
        assert_eq!(status, 200);
    }
    assert!(db.connections() >= 1, "the server holds connections");
    server.terminate();
    server.wait_for_exit();
    let started = Instant::now();
    while db.connections() > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "connections outlived the server"
        );
        thread::sleep(Duration::from_millis(50));
    }
}
