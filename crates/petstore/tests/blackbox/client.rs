//! Black-box: `petstore-client` against the real `petstore` binary. Every operation, paging
//! through hundreds of pets; a burst of calls with a Free key that the client paces so that the
//! server never sees a request before a `Retry-After` instant and never bans the key; a
//! create whose answer is lost on the way, retried to exactly one pet; and a polling client
//! whose conditional requests spend no quota.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::UNIX_EPOCH;

use crate::common::{TestServer, run, unlimited_key};
use futures_util::TryStreamExt;
use petstore_client::{Client, ErrorCode, NewPet, OrderQuery, PetQuery, PetStatus, Plan};
use serde_json::Value;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn new_pet(name: &str, status: PetStatus) -> NewPet {
    NewPet {
        name: name.into(),
        category_id: 1,
        status: Some(status),
    }
}

#[test]
fn every_operation_and_hundreds_of_pets_paged_to_the_end() {
    let (_dir, db) = crate::common::temp_db();
    let key = unlimited_key(&db);
    let server = TestServer::start(&db, &["--bootstrap-key=false"]);
    let client = Client::builder(&server.base, &key).build().expect("client");
    runtime().block_on(async {
        let statuses = [PetStatus::Available, PetStatus::Pending, PetStatus::Sold];
        let mut created = Vec::new();
        for i in 0..250 {
            let pet = client
                .create_pet(&new_pet(&format!("pet {i}"), statuses[i % 3]))
                .await
                .expect("create");
            created.push(pet);
        }
        assert!(client.rate_limit().is_some(), "the headers were read");

        // Every pet, through the `next` links, in id order.
        let query = PetQuery::default().limit(37);
        let all: Vec<_> = client.pets(&query).try_collect().await.expect("stream");
        assert_eq!(all, created);
        let sold: Vec<_> = client
            .pets(&PetQuery::default().limit(20).status(PetStatus::Sold))
            .try_collect()
            .await
            .expect("stream");
        let expected: Vec<_> = created
            .iter()
            .filter(|p| p.status == PetStatus::Sold)
            .cloned()
            .collect();
        assert_eq!(sold, expected);
        let page = client.list_pets(&query).await.expect("page");
        assert_eq!(page.items.len(), 37);
        assert_eq!(page.next_after(), Some(created[36].id));

        #[allow(deprecated)]
        {
            assert_eq!(
                client.get_pet(created[5].id).await.expect("get"),
                created[5]
            );
            let missing = client.get_pet(9_999_999).await.expect_err("404");
            assert_eq!(missing.code(), Some(ErrorCode::PetNotFound));
            assert_eq!(missing.status(), Some(404));
        }

        // The store area.
        let available = created[0].id;
        let order = client.place_order(available).await.expect("order");
        assert_eq!(order.pet_id, available);
        assert_eq!(client.get_order(order.id).await.expect("get"), order);
        let again = client
            .place_order(available)
            .await
            .expect_err("pending now");
        assert_eq!(again.code(), Some(ErrorCode::PetNotAvailable));
        let orders = client
            .list_orders(&OrderQuery::default())
            .await
            .expect("list");
        assert_eq!(orders.items, vec![order.clone()]);
        let inventory = client.inventory().await.expect("inventory");
        assert_eq!(
            inventory.available + inventory.pending + inventory.sold,
            250
        );
        let cancelled = client.cancel_order(order.id).await.expect("cancel");
        assert_eq!(cancelled.status.as_str(), "cancelled");
        let status = client.rate_limit_status().await.expect("status");
        assert_eq!(status.plan, Plan::Enterprise);

        // A strict body's refusal comes back as the Error object.
        let bad = client
            .create_pet(&NewPet {
                name: " ".into(),
                category_id: 1,
                status: None,
            })
            .await
            .expect_err("blank name");
        assert_eq!(bad.code(), Some(ErrorCode::InvalidField));
    });
    server.stop();
}

/// Every access-log line of `log` (JSON): time (Unix seconds, fractional), status, code.
fn access_lines(log: &std::path::Path) -> Vec<(f64, u64, String)> {
    std::fs::read_to_string(log)
        .expect("log")
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["target"] == "petstore::access" && line["path"] == "/v1/pets")
        .map(|line| {
            let time =
                humantime::parse_rfc3339(line["time"].as_str().expect("time")).expect("RFC 3339");
            let time = time
                .duration_since(UNIX_EPOCH)
                .expect("after 1970")
                .as_secs_f64();
            let code = line["code"].as_str().unwrap_or_default().to_owned();
            (time, line["status"].as_u64().expect("status"), code)
        })
        .collect()
}

/// A burst of 100 list calls with a Free key (60 a minute), with the client collecting the
/// `429` (`wait_when_exhausted(false)`) or avoiding it (the default).
fn burst(wait_when_exhausted: bool) {
    let (dir, db) = crate::common::temp_db();
    let key = run(&db, &["keys", "create", "--plan", "free"]);
    let log = dir.path().join("server.log");
    let server = TestServer::start_logging(
        &db,
        &["--bootstrap-key=false", "--log-format", "json"],
        Some(&log),
    );
    // Every call a full answer, counted: no answers kept to ask for again (a `304` would be
    // free, and this burst is about the limits).
    let client = Client::builder(&server.base, key.trim())
        .wait_when_exhausted(wait_when_exhausted)
        .kept_answers(0)
        .build()
        .expect("client");
    runtime().block_on(async {
        for call in 0..100 {
            client
                .list_pets(&PetQuery::default())
                .await
                .unwrap_or_else(|e| panic!("call {call}: {e}"));
        }
    });
    server.stop();
    let lines = access_lines(&log);
    assert_eq!(
        lines.iter().filter(|(_, status, _)| *status == 200).count(),
        100,
        "all succeeded"
    );
    assert!(
        lines
            .iter()
            .all(|(_, _, code)| code != "temporarily_banned"),
        "never banned"
    );
    let limited: Vec<f64> = lines
        .iter()
        .filter(|(_, s, _)| *s == 429)
        .map(|(t, _, _)| *t)
        .collect();
    if wait_when_exhausted {
        assert!(
            limited.is_empty(),
            "the client waited for the reset instead: {limited:?}"
        );
    } else {
        assert!(!limited.is_empty(), "the 61st call met its 429");
    }
    // Each 429's Retry-After is the end of its minute (the minute window ran out): nothing
    // arrived after it and before that instant.
    for refused in limited {
        let next_minute = (refused / 60.0).floor() * 60.0 + 60.0;
        let early = lines
            .iter()
            .filter(|(t, _, _)| *t > refused && *t < next_minute)
            .count();
        assert_eq!(early, 0, "a request came {refused} < t < {next_minute}");
    }
}

#[test]
fn a_burst_that_meets_its_429_waits_it_out_and_is_never_banned() {
    burst(false);
}

#[test]
fn a_burst_that_sees_its_window_used_up_waits_for_the_reset_without_a_429() {
    burst(true);
}

/// A proxy to `upstream` that passes every connection through, except that the first answer
/// to a `POST` is swallowed: the connection closes once the server has answered (committed),
/// before a byte reaches the client.
fn lossy_proxy(upstream: String) -> (String, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let lost = Arc::new(AtomicBool::new(false));
    let lost_flag = lost.clone();
    thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let upstream = upstream.clone();
            let lost = lost_flag.clone();
            thread::spawn(move || {
                let Ok(mut server) = TcpStream::connect(&upstream) else {
                    return;
                };
                let mut first = [0u8; 8192];
                let Ok(n) = client.read(&mut first) else {
                    return;
                };
                let _ = server.write_all(&first[..n]);
                // The rest of the request (a body in a later segment) and any next ones.
                let (mut client_reader, mut server_writer) = (
                    client.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                );
                thread::spawn(move || {
                    let _ = std::io::copy(&mut client_reader, &mut server_writer);
                });
                if first[..n].starts_with(b"POST ") && !lost.swap(true, Ordering::SeqCst) {
                    // Once the server answers (the pet is committed), drop the connection
                    // before a byte of the answer reaches the client.
                    let mut answer = [0u8; 1];
                    let _ = server.read(&mut answer);
                    let _ = client.shutdown(std::net::Shutdown::Both);
                    let _ = server.shutdown(std::net::Shutdown::Both);
                    return;
                }
                let _ = std::io::copy(&mut server, &mut client);
            });
        }
    });
    (format!("http://{addr}/v1"), lost)
}

#[test]
fn a_create_whose_answer_is_lost_is_retried_into_exactly_one_pet() {
    let (_dir, db) = crate::common::temp_db();
    let key = unlimited_key(&db);
    let server = TestServer::start(&db, &["--bootstrap-key=false"]);
    let (through_proxy, lost) = lossy_proxy(server.addr());
    let client = Client::builder(&through_proxy, &key)
        .build()
        .expect("client");
    let pet = runtime()
        .block_on(client.create_pet(&new_pet("Rex", PetStatus::Available)))
        .expect("created in the end");
    assert!(lost.load(Ordering::SeqCst), "the first answer was lost");
    let (status, listed) = server.list_pets("", &key);
    assert_eq!(status, 200);
    let listed = listed.as_array().expect("array").clone();
    assert_eq!(listed.len(), 1, "exactly one pet: {listed:?}");
    assert_eq!(listed[0]["id"], pet.id);
    server.stop();
}

/// A Free key polling its pets, one pet, its order and the inventory: after the first answers,
/// every poll is a conditional request answered `304` from the client's kept answers, and the
/// key's quota does not move; a change is seen at the next poll, and that answer is counted.
#[test]
fn a_polling_client_spends_no_quota_while_nothing_changes() {
    let (dir, db) = crate::common::temp_db();
    let key = run(&db, &["keys", "create", "--plan", "free"]);
    let writer = unlimited_key(&db);
    let log = dir.path().join("server.log");
    let server = TestServer::start_logging(
        &db,
        &["--bootstrap-key=false", "--log-format", "json"],
        Some(&log),
    );
    let client = Client::builder(&server.base, key.trim())
        .build()
        .expect("client");
    let other = Client::builder(&server.base, &writer)
        .build()
        .expect("client");
    crate::common::wait_for_room_in_minute(10);
    runtime().block_on(async {
        let rex = client
            .create_pet(&new_pet("Rex", PetStatus::Available))
            .await
            .expect("create");
        let tom = client
            .create_pet(&new_pet("Tom", PetStatus::Available))
            .await
            .expect("create");
        let order = client.place_order(tom.id).await.expect("order");
        let query = PetQuery::default();
        let page = client.list_pets(&query).await.expect("page");
        #[allow(deprecated)]
        let one = client.get_pet(rex.id).await.expect("pet");
        let placed = client.get_order(order.id).await.expect("order");
        let inventory = client.inventory().await.expect("inventory");
        let left = client.rate_limit().expect("headers").remaining;
        assert_eq!(left, 60 - 7, "seven requests so far");
        for poll in 0..12 {
            assert_eq!(
                client.list_pets(&query).await.expect("page"),
                page,
                "{poll}"
            );
            #[allow(deprecated)]
            let again = client.get_pet(rex.id).await.expect("pet");
            assert_eq!(again, one);
            assert_eq!(client.get_order(order.id).await.expect("order"), placed);
            assert_eq!(client.inventory().await.expect("inventory"), inventory);
            assert_eq!(
                client.rate_limit().expect("headers").remaining,
                left,
                "poll {poll}: nothing spent"
            );
        }
        // Another key's pet: the next poll sees it, and that answer is counted.
        let new = other
            .create_pet(&new_pet("Kit", PetStatus::Available))
            .await
            .expect("create");
        let changed = client.list_pets(&query).await.expect("page");
        assert_eq!(changed.items.last(), Some(&new));
        assert_eq!(client.rate_limit().expect("headers").remaining, left - 1);
    });
    server.stop();
    let statuses: Vec<u64> = access_lines(&log)
        .into_iter()
        .map(|(_, status, _)| status)
        .collect();
    // `/v1/pets` only: two creates, the first page, 12 polls, the changed page.
    assert_eq!(statuses.iter().filter(|s| **s == 304).count(), 12);
    assert_eq!(statuses.last(), Some(&200));
}
