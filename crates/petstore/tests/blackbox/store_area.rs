//! Black-box: the store area's rules under concurrency, across instances. Two `petstore`
//! processes on one PostgreSQL; 16 threads order the same 50 pets at once, then cancel and
//! re-order at random; the order lifecycle must hold exactly: one order per pet, and a pet is
//! pending if and only if it has exactly one placed or approved order. Skipped loudly without
//! PostgreSQL outside CI; fails in CI.

use std::collections::HashMap;
use std::sync::{Arc, Barrier};
use std::thread;

use crate::common::{TestServer, agent, run, unlimited_key};
use petstore_store::testing::TestDatabase;
use serde_json::Value;

const PETS: usize = 50;
const THREADS: usize = 16;

/// A request's status and JSON body.
fn send(method: &str, url: &str, key: &str, body: Option<String>) -> (u16, Value) {
    let agent = agent();
    let mut response = match (method, body) {
        ("POST", Some(body)) => agent
            .post(url)
            .header("Authorization", format!("Bearer {key}"))
            .header("Content-Type", "application/json")
            .send(body.as_str()),
        ("POST", None) => agent
            .post(url)
            .header("Authorization", format!("Bearer {key}"))
            .send_empty(),
        ("DELETE", _) => agent
            .delete(url)
            .header("Authorization", format!("Bearer {key}"))
            .call(),
        _ => agent
            .get(url)
            .header("Authorization", format!("Bearer {key}"))
            .call(),
    }
    .expect("request");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().expect("body");
    (status, serde_json::from_str(&text).expect("JSON"))
}

fn order(base: &str, key: &str, pet: i64) -> (u16, Value) {
    send(
        "POST",
        &format!("{base}/store/orders"),
        key,
        Some(format!(r#"{{"petId":{pet}}}"#)),
    )
}

/// A small deterministic generator per thread (no dependency for a shuffle).
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Every pet's status, and every order (all keys'), read after the threads are done.
fn check_invariant(db: &str, base: &str, key: &str, pets: &[i64]) -> HashMap<&'static str, u64> {
    let (status, listed) = send("GET", &format!("{base}/pets?limit=100"), key, None);
    assert_eq!(status, 200);
    let statuses: HashMap<i64, String> = listed
        .as_array()
        .expect("array")
        .iter()
        .map(|pet| {
            (
                pet["id"].as_i64().expect("id"),
                pet["status"].as_str().expect("status").to_owned(),
            )
        })
        .collect();
    let orders: Vec<Value> =
        serde_json::from_str(&run(db, &["orders", "list", "--format", "json"])).expect("JSON");
    let mut counts = HashMap::new();
    for pet in pets {
        let open = orders
            .iter()
            .filter(|o| {
                o["petId"] == *pet && matches!(o["status"].as_str(), Some("placed" | "approved"))
            })
            .count();
        let pending = statuses[pet] == "pending";
        assert!(open <= 1, "pet {pet} has {open} open orders");
        assert_eq!(
            pending,
            open == 1,
            "pet {pet} is {} with {open} open orders",
            statuses[pet]
        );
        *counts
            .entry(if pending { "pending" } else { "other" })
            .or_insert(0) += 1;
    }
    let (_, inventory) = send("GET", &format!("{base}/store/inventory"), key, None);
    let total: u64 = ["available", "pending", "sold"]
        .iter()
        .map(|s| inventory[s].as_u64().expect("count"))
        .sum();
    assert_eq!(
        total,
        pets.len() as u64,
        "the inventory adds up: {inventory}"
    );
    assert_eq!(
        inventory["pending"].as_u64(),
        counts.get("pending").copied().or(Some(0))
    );
    counts
}

#[test]
fn sixteen_threads_on_two_instances_keep_the_order_lifecycle_exact() {
    if let Some(db) = TestDatabase::postgres() {
        order_lifecycle_stays_exact(&db);
    }
}

/// The same on MariaDB.
#[test]
fn sixteen_threads_on_two_instances_on_mariadb_keep_the_order_lifecycle_exact() {
    if let Some(db) = TestDatabase::mysql() {
        order_lifecycle_stays_exact(&db);
    }
}

fn order_lifecycle_stays_exact(db: &TestDatabase) {
    let url = db.url().to_owned();
    let key = unlimited_key(&url);
    let first = TestServer::start(&url, &["--bootstrap-key=false"]);
    let second = TestServer::start(&url, &["--bootstrap-key=false"]);
    let bases = [first.base.clone(), second.base.clone()];
    let pets: Vec<i64> = (0..PETS)
        .map(|i| {
            let (status, pet) = crate::common::post(
                &bases[0],
                &key,
                &format!(r#"{{"name":"pet {i}","categoryId":1}}"#),
            );
            assert_eq!(status, 201);
            pet["id"].as_i64().expect("id")
        })
        .collect();

    // Every thread tries every pet, in an order of its own, at once.
    let start = Arc::new(Barrier::new(THREADS));
    let racers: Vec<_> = (0..THREADS)
        .map(|n| {
            let (base, key, pets, start) = (
                bases[n % 2].clone(),
                key.clone(),
                pets.clone(),
                start.clone(),
            );
            thread::spawn(move || {
                let mut random = XorShift(n as u64 + 1);
                let mut order_of = pets.clone();
                for i in (1..order_of.len()).rev() {
                    order_of.swap(i, random.below(i + 1));
                }
                start.wait();
                let mut placed = Vec::new();
                let mut refused = 0;
                for pet in order_of {
                    let (status, body) = order(&base, &key, pet);
                    match status {
                        201 => placed.push(body["id"].as_i64().expect("id")),
                        409 => {
                            assert_eq!(body["code"], "pet_not_available");
                            refused += 1;
                        }
                        other => panic!("unexpected {other}: {body}"),
                    }
                }
                (placed, refused)
            })
        })
        .collect();
    let results: Vec<(Vec<i64>, usize)> = racers
        .into_iter()
        .map(|r| r.join().expect("racer"))
        .collect();
    let placed: usize = results.iter().map(|(p, _)| p.len()).sum();
    let refused: usize = results.iter().map(|(_, r)| r).sum();
    assert_eq!(placed, PETS, "exactly one order per pet");
    assert_eq!(
        refused,
        PETS * THREADS - PETS,
        "every other attempt was refused"
    );
    let counts = check_invariant(&url, &bases[0], &key, &pets);
    assert_eq!(
        counts.get("pending"),
        Some(&(PETS as u64)),
        "every pet is pending"
    );

    // Then cancels, approvals and re-orders at random, from every thread on both instances.
    let mut order_ids: Vec<i64> = results.into_iter().flat_map(|(p, _)| p).collect();
    order_ids.sort_unstable();
    let start = Arc::new(Barrier::new(THREADS));
    let churners: Vec<_> = (0..THREADS)
        .map(|n| {
            let (base, key, pets, orders, start, url) = (
                bases[n % 2].clone(),
                key.clone(),
                pets.clone(),
                order_ids.clone(),
                start.clone(),
                url.clone(),
            );
            thread::spawn(move || {
                let mut random = XorShift(1_000 + n as u64);
                let mut orders = orders;
                start.wait();
                for _ in 0..30 {
                    match random.below(4) {
                        0 | 1 => {
                            let id = orders[random.below(orders.len())];
                            let (status, body) = send(
                                "POST",
                                &format!("{base}/store/orders/{id}/cancel"),
                                &key,
                                None,
                            );
                            assert!(
                                status == 200
                                    || (status == 409 && body["code"] == "order_not_cancellable"),
                                "cancel {id}: {status} {body}"
                            );
                        }
                        2 => {
                            let pet = pets[random.below(pets.len())];
                            let (status, body) = order(&base, &key, pet);
                            match status {
                                201 => orders.push(body["id"].as_i64().expect("id")),
                                409 => assert_eq!(body["code"], "pet_not_available"),
                                other => panic!("order {pet}: {other} {body}"),
                            }
                        }
                        _ => {
                            // The operator approves one (it may be cancelled already: refused).
                            let id = orders[random.below(orders.len())].to_string();
                            let _ = crate::common::petstore(&url)
                                .args(["orders", "approve", &id])
                                .output()
                                .expect("approve");
                        }
                    }
                }
            })
        })
        .collect();
    for churner in churners {
        churner.join().expect("churner");
    }
    check_invariant(&url, &bases[0], &key, &pets);
}

/// Thirty clients at once, on two instances over one database, order the same available pet:
/// exactly one order is placed (`201`), every other is refused `409 pet_not_available`, and the
/// pet is pending with that one order. PostgreSQL and MariaDB.
#[test]
fn thirty_clients_racing_for_one_pet_on_two_instances_make_one_order() {
    for db in [TestDatabase::postgres(), TestDatabase::mysql()]
        .into_iter()
        .flatten()
    {
        racing_for_one_pet_makes_one_order(&db);
    }
}

fn racing_for_one_pet_makes_one_order(db: &TestDatabase) {
    const RACERS: usize = 30;
    let url = db.url().to_owned();
    let key = unlimited_key(&url);
    let first = TestServer::start(&url, &["--bootstrap-key=false"]);
    let second = TestServer::start(&url, &["--bootstrap-key=false"]);
    let (status, pet) = send(
        "POST",
        &format!("{}/pets", first.base),
        &key,
        Some(r#"{"name":"Sought","categoryId":1}"#.to_owned()),
    );
    assert_eq!(status, 201, "{pet}");
    let pet = pet["id"].as_i64().expect("id");
    let start = Arc::new(Barrier::new(RACERS));
    let racers: Vec<_> = (0..RACERS)
        .map(|n| {
            let base = [&first.base, &second.base][n % 2].clone();
            let (key, start) = (key.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                order(&base, &key, pet)
            })
        })
        .collect();
    let answers: Vec<(u16, Value)> = racers
        .into_iter()
        .map(|racer| racer.join().expect("racer"))
        .collect();
    let placed: Vec<&Value> = answers
        .iter()
        .filter(|(status, _)| *status == 201)
        .map(|(_, order)| order)
        .collect();
    assert_eq!(placed.len(), 1, "one order placed: {answers:?}");
    for (status, body) in answers.iter().filter(|(status, _)| *status != 201) {
        assert_eq!(
            (*status, body["code"].as_str()),
            (409, Some("pet_not_available")),
            "{body}"
        );
    }
    let (status, found) = send("GET", &format!("{}/pets/{pet}", second.base), &key, None);
    assert_eq!((status, found["status"].as_str()), (200, Some("pending")));
    let listed: Vec<Value> =
        serde_json::from_str(&run(&url, &["orders", "list", "--format", "json"])).expect("JSON");
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["id"], placed[0]["id"]);
    first.stop();
    second.stop();
}
