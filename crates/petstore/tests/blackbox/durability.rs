//! Black-box: the service answers a write `2xx` only once PostgreSQL has confirmed its commit.
//! Against a PostgreSQL server of the test's own whose commits wait for a synchronous standby
//! that does not exist, a `POST /v1/pets` (with and without `Idempotency-Key`) waits in its
//! commit; the server is then stopped at once (`pg_ctl stop -m immediate`). The pet was never
//! confirmed: the answer is `503` with `Retry-After`, never `201`.

use std::thread;
use std::time::{Duration, Instant};

use petstore_store::testing::{PostgresServer, RawPostgres};
use serde_json::Value;

use crate::common::{TestServer, unlimited_key};

/// `POST {base}/pets`, optionally with an `Idempotency-Key`: status, `Retry-After`, body.
fn create(base: &str, key: &str, idempotency: Option<&str>) -> (u16, Option<String>, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(90)))
        .build()
        .into();
    let mut request = agent
        .post(format!("{base}/pets"))
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json");
    if let Some(idempotency) = idempotency {
        request = request.header("Idempotency-Key", idempotency);
    }
    let mut response = request
        .send(r#"{"name":"Unconfirmed","categoryId":1}"#)
        .expect("POST");
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|value| value.to_str().expect("ASCII").to_owned());
    let body = serde_json::from_str(&response.body_mut().read_to_string().expect("body"))
        .expect("JSON body");
    (response.status().as_u16(), retry_after, body)
}

/// Sessions of `server` whose create waits for a standby to confirm its commit: a pet's one
/// statement (`WITH first AS (INSERT ...`: its insert and its deliveries), or an idempotent
/// create's claim (an `INSERT`) or transaction's `COMMIT`.
fn inserts_waiting_for_a_standby(server: &PostgresServer) -> usize {
    RawPostgres::connect(&server.url("127.0.0.1", ""))
        .and_then(|watcher| {
            watcher.count(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE wait_event = 'SyncRep' \
                 AND (query LIKE '%INSERT INTO%' OR query = 'COMMIT')",
            )
        })
        .expect("read pg_stat_activity")
}

#[test]
fn a_create_whose_commit_postgresql_never_confirmed_is_answered_503() {
    let Some(mut server) = PostgresServer::start(&[]) else {
        return;
    };
    let url = server.url("127.0.0.1", "");
    let key = unlimited_key(&url);
    // A statement timeout no wait here reaches: the answer comes from the server's stop.
    let service = TestServer::start(
        &url,
        &["--bootstrap-key=false", "--db-statement-timeout", "60s"],
    );
    let (status, _, body) = create(&service.base, &key, None);
    assert_eq!(status, 201, "{body}");

    // From now on, every commit waits for a standby that never comes.
    server.set("synchronous_standby_names", "nobody");
    let requests: Vec<_> = [None, Some("unconfirmed-1")]
        .into_iter()
        .map(|idempotency| {
            let (base, key) = (service.base.clone(), key.clone());
            thread::spawn(move || create(&base, &key, idempotency))
        })
        .collect();
    let started = Instant::now();
    while inserts_waiting_for_a_standby(&server) < requests.len() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the creates did not come to wait for the standby"
        );
        thread::sleep(Duration::from_millis(50));
    }
    server.stop_immediately();

    for request in requests {
        let (status, retry_after, body) = request.join().expect("the request's thread");
        assert_eq!(
            status, 503,
            "a pet whose commit was never confirmed: {body}"
        );
        assert_eq!(body["code"], "service_unavailable", "{body}");
        assert_eq!(body["status"], 503, "{body}");
        assert!(retry_after.is_some(), "503 without Retry-After");
    }
}
