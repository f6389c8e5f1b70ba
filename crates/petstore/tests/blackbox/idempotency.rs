//! Black-box: `Idempotency-Key` across processes. Two `petstore` processes on one PostgreSQL
//! racing one key from many threads create exactly one pet; and a create whose process is
//! killed (`kill -9`) after the commit, its answer never received, is replayed on retry after
//! the restart (SQLite, through the group-commit writer, and PostgreSQL).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{TestServer, agent, unlimited_key};
use petstore_store::testing::TestDatabase;
use serde_json::Value;

const REX: &str = r#"{"name":"Rex","categoryId":1}"#;

/// `POST {base}/pets` with `REX` under `idempotency`: status, whether replayed, body.
fn create(base: &str, key: &str, idempotency: &str) -> (u16, bool, Value) {
    let mut response = agent()
        .post(format!("{base}/pets"))
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .header("Idempotency-Key", idempotency)
        .send(REX)
        .expect("POST");
    let replayed = response
        .headers()
        .get("idempotent-replayed")
        .is_some_and(|v| v == "true");
    let status = response.status().as_u16();
    let body = serde_json::from_str(&response.body_mut().read_to_string().expect("body"))
        .expect("JSON body");
    (status, replayed, body)
}

fn pets(base: &str, key: &str) -> Vec<Value> {
    let (status, body) = crate::common::get(base, "/pets?limit=100", key);
    assert_eq!(status, 200);
    body.as_array().expect("array").clone()
}

#[test]
fn two_instances_racing_one_key_from_many_threads_create_one_pet() {
    if let Some(db) = TestDatabase::postgres() {
        racing_one_key_creates_one_pet(&db, 16);
    }
}

/// The same on MariaDB, forty racers a round.
#[test]
fn two_instances_on_mariadb_racing_one_key_create_one_pet() {
    if let Some(db) = TestDatabase::mysql() {
        racing_one_key_creates_one_pet(&db, 40);
    }
}

fn racing_one_key_creates_one_pet(db: &TestDatabase, threads: usize) {
    let url = db.url().to_owned();
    let key = unlimited_key(&url);
    let first = TestServer::start(&url, &["--bootstrap-key=false"]);
    let second = TestServer::start(&url, &["--bootstrap-key=false"]);
    const ROUNDS: usize = 5;
    for round in 0..ROUNDS {
        let idempotency = format!("race-{round}");
        let start = Arc::new(Barrier::new(threads));
        let racers: Vec<_> = (0..threads)
            .map(|n| {
                let base = if n % 2 == 0 {
                    &first.base
                } else {
                    &second.base
                }
                .clone();
                let (key, idempotency, start) = (key.clone(), idempotency.clone(), start.clone());
                thread::spawn(move || {
                    start.wait();
                    // A client retries 409 after its Retry-After, as the interface asks.
                    loop {
                        let (status, replayed, body) = create(&base, &key, &idempotency);
                        match status {
                            201 => return (replayed, body),
                            409 => {
                                assert_eq!(body["code"], "idempotency_request_in_progress");
                                thread::sleep(Duration::from_millis(100));
                            }
                            other => panic!("unexpected {other}: {body}"),
                        }
                    }
                })
            })
            .collect();
        let answers: Vec<(bool, Value)> = racers
            .into_iter()
            .map(|racer| racer.join().expect("racer"))
            .collect();
        let created = answers.iter().filter(|(replayed, _)| !replayed).count();
        assert_eq!(created, 1, "round {round}: exactly one request ran");
        assert!(
            answers.iter().all(|(_, body)| *body == answers[0].1),
            "round {round}: every answer is the one pet"
        );
    }
    assert_eq!(pets(&first.base, &key).len(), ROUNDS, "one pet per key");
    assert_eq!(pets(&second.base, &key).len(), ROUNDS);
}

/// Sends a create and hangs up without reading the answer; returns once the pet is in the
/// catalogue (committed), as seen through `base`.
fn create_and_hang_up(base: &str, key: &str, idempotency: &str) {
    let addr = base.trim_start_matches("http://").trim_end_matches("/v1");
    let mut stream = TcpStream::connect(addr).expect("connect");
    let request = format!(
        "POST /v1/pets HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nIdempotency-Key: {idempotency}\r\n\
         Content-Length: {}\r\n\r\n{REX}",
        REX.len()
    );
    stream.write_all(request.as_bytes()).expect("send");
    let deadline = Instant::now() + Duration::from_secs(10);
    while pets(base, key).is_empty() {
        assert!(Instant::now() < deadline, "the pet was never committed");
        thread::sleep(Duration::from_millis(20));
    }
    // Never read: the answer is lost with the process.
    let _ = stream.set_read_timeout(Some(Duration::from_millis(1)));
    let _ = stream.read(&mut [0; 1]);
}

fn killed_after_commit_then_retried_replays(url: &str) {
    let key = unlimited_key(url);
    let server = TestServer::start(url, &["--bootstrap-key=false"]);
    create_and_hang_up(&server.base, &key, "lost-answer");
    server.crash();
    let server = TestServer::start(url, &["--bootstrap-key=false"]);
    let (status, replayed, body) = create(&server.base, &key, "lost-answer");
    assert_eq!((status, replayed), (201, true), "{body}");
    let listed = pets(&server.base, &key);
    assert_eq!(listed, vec![body], "one pet, the one replayed");
}

#[test]
fn a_create_killed_after_its_commit_is_replayed_on_sqlite() {
    let (_dir, db) = crate::common::temp_db();
    killed_after_commit_then_retried_replays(&db);
}

#[test]
fn a_create_killed_after_its_commit_is_replayed_on_postgres() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    killed_after_commit_then_retried_replays(db.url());
}
