//! Clients that write through a database failover, and the checks that follow it: what the
//! failover tests (`failover`, a promotion by hand; `patroni`, a failover manager) share.
//!
//! Each client creates pets (every other one with an `Idempotency-Key`), reads each one back on
//! the other instance (read-your-writes: a `404` is a write the read did not see) and places an
//! order for it, on two instances in turn, until told to stop. Every answer must be a success
//! or `503` with `Retry-After`, within [`LONGEST`]. Afterwards [`Answers::check`] retries the
//! creates left unanswered and finds every acknowledged pet and order on the server that takes
//! writes, and at most one pet per idempotency key.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use petstore_store::testing::RawPostgres;
use serde_json::Value;

/// The longest any request may take: the default deadline of a store call (statement timeout,
/// 5 s, plus 1 s), and a margin for a loaded machine.
pub const LONGEST: Duration = Duration::from_secs(9);

/// What the clients were answered.
#[derive(Default)]
pub struct Answers {
    /// Pets answered `201`: id and name.
    pub pets: Vec<(i64, String)>,
    /// Orders answered `201`: id and pet.
    pub orders: Vec<(i64, i64)>,
    /// Creates with an `Idempotency-Key` answered `503`: key and body, retried after.
    unanswered: Vec<(String, String)>,
    /// Every idempotency key's pet name, and the pet it was answered with, if any.
    keyed: HashMap<String, (String, Option<i64>)>,
    /// When the latest write that each instance answered `201` was sent (a write sent after an
    /// event and acknowledged shows writes are back; one answered after it may have been done
    /// before).
    pub last_write: [Option<Instant>; 2],
    /// Answers `503` (with `Retry-After`, checked as they come).
    pub unavailable: usize,
    /// Pets read back on the other instance after their `201`.
    pub read_back: usize,
    /// Pets answered `201` that a read on the other instance then did not find: id, instance
    /// and when (since the load started).
    pub unseen: Vec<(i64, usize, Duration)>,
}

/// The clients writing to two instances, and what they were answered.
pub struct Load {
    stop: Arc<AtomicBool>,
    clients: Vec<thread::JoinHandle<()>>,
    /// What the clients were answered so far.
    pub answers: Arc<Mutex<Answers>>,
}

impl Load {
    /// `clients` clients writing with `key` to the instances at `bases`; their pets are named
    /// after `round`.
    pub fn start(round: &str, clients: usize, bases: &[String; 2], key: &str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let answers = Arc::new(Mutex::new(Answers::default()));
        let started = Instant::now();
        let clients = (0..clients)
            .map(|n| {
                let name = format!("{round}c{n}");
                let (bases, key) = (bases.clone(), key.to_owned());
                let (stop, answers) = (stop.clone(), answers.clone());
                thread::spawn(move || client(&name, &bases, &key, &stop, &answers, started))
            })
            .collect();
        Self {
            stop,
            clients,
            answers,
        }
    }

    /// Pets acknowledged so far.
    pub fn pets(&self) -> usize {
        self.answers.lock().expect("answers").pets.len()
    }

    /// Whether both instances acknowledged a write sent after `at`.
    pub fn both_wrote_after(&self, at: Instant) -> bool {
        let answers = self.answers.lock().expect("answers");
        answers
            .last_write
            .iter()
            .all(|last| last.is_some_and(|last| last > at))
    }

    /// Stops the clients; what they were answered.
    pub fn stop(self) -> Answers {
        self.stop.store(true, Ordering::Relaxed);
        for client in self.clients {
            client.join().expect("client");
        }
        Arc::try_unwrap(self.answers)
            .ok()
            .expect("clients done")
            .into_inner()
            .expect("answers")
    }
}

/// One request: status and body (JSON, or `Null` for none).
pub fn send(url: &str, key: &str, body: Option<&str>, idempotency: Option<&str>) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let started = Instant::now();
    let mut response = match body {
        Some(body) => {
            let mut request = agent
                .post(url)
                .header("Authorization", format!("Bearer {key}"))
                .header("Content-Type", "application/json");
            if let Some(idempotency) = idempotency {
                request = request.header("Idempotency-Key", idempotency);
            }
            request.send(body)
        }
        None => agent
            .get(url)
            .header("Authorization", format!("Bearer {key}"))
            .call(),
    }
    .unwrap_or_else(|error| panic!("{url}: {error}"));
    let took = started.elapsed();
    assert!(took < LONGEST, "{url} took {took:?}");
    let status = response.status().as_u16();
    if status == 503 {
        assert!(
            response.headers().contains_key("retry-after"),
            "a 503 without Retry-After"
        );
    }
    let text = response.body_mut().read_to_string().expect("body");
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("{url}: not JSON: {text}"))
    };
    assert!(
        matches!(status, 200 | 201 | 404 | 409 | 503),
        "{url}: {status} {body}"
    );
    (status, body)
}

/// A client: see the module's description.
fn client(
    name: &str,
    bases: &[String; 2],
    key: &str,
    stop: &AtomicBool,
    shared: &Mutex<Answers>,
    started: Instant,
) {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let instance = n % 2;
        let base = &bases[instance];
        let name = format!("{name}n{n}");
        let body = format!(r#"{{"name":"{name}","categoryId":1}}"#);
        let idempotency = (n % 2 == 0).then(|| format!("failover-{name}"));
        let sent = Instant::now();
        let (status, pet) = send(
            &format!("{base}/pets"),
            key,
            Some(&body),
            idempotency.as_deref(),
        );
        let mut answers = shared.lock().expect("answers");
        if let Some(idempotency) = &idempotency {
            let answered = (status == 201).then(|| pet["id"].as_i64().expect("id"));
            answers
                .keyed
                .insert(idempotency.clone(), (name.clone(), answered));
            if status == 503 {
                answers.unanswered.push((idempotency.clone(), body.clone()));
            }
        }
        if status == 503 {
            answers.unavailable += 1;
            continue;
        }
        assert_eq!(status, 201, "{pet}");
        let id = pet["id"].as_i64().expect("id");
        answers.pets.push((id, name));
        answers.last_write[instance] = Some(sent);
        drop(answers);
        let other = 1 - instance;
        let (status, _) = send(&format!("{}/pets/{id}", bases[other]), key, None, None);
        let mut answers = shared.lock().expect("answers");
        match status {
            200 => answers.read_back += 1,
            404 => answers.unseen.push((id, other, started.elapsed())),
            503 => answers.unavailable += 1,
            other => panic!("a read of a new pet: {other}"),
        }
        drop(answers);
        let sent = Instant::now();
        let (status, order) = send(
            &format!("{base}/store/orders"),
            key,
            Some(&format!(r#"{{"petId":{id}}}"#)),
            None,
        );
        let mut answers = shared.lock().expect("answers");
        match status {
            201 => {
                let order_id = order["id"].as_i64().expect("order id");
                answers.orders.push((order_id, id));
                answers.last_write[instance] = Some(sent);
            }
            503 => answers.unavailable += 1,
            other => panic!("an order on a new pet: {other} {order}"),
        }
    }
}

/// `/readyz` of the instance whose API is at `base`.
pub fn ready(base: &str) -> u16 {
    let origin = base.trim_end_matches("/v1");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(LONGEST))
        .build()
        .into();
    agent
        .get(format!("{origin}/readyz"))
        .call()
        .expect("GET /readyz")
        .status()
        .as_u16()
}

/// Waits up to `within` for `condition`; whether it held.
pub fn eventually(within: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    loop {
        if condition() {
            return true;
        }
        if started.elapsed() > within {
            return false;
        }
        thread::sleep(Duration::from_millis(100));
    }
}

fn number(field: &Option<String>) -> i64 {
    field
        .as_deref()
        .and_then(|text| text.parse().ok())
        .expect("a number")
}

impl Answers {
    /// Retries the creates answered `503` with their keys through `base` (each now has its
    /// outcome, or is still claimed by the request the failover cut short: `409`), then checks
    /// what `leader` (the server that takes writes now) holds: every pet and order answered
    /// `201`, at most one pet per idempotency key (the one it was answered with), and that
    /// every pet read back was seen. `what` names the run in the messages.
    pub fn check(&mut self, what: &str, base: &str, key: &str, leader: &str) {
        for (idempotency, body) in std::mem::take(&mut self.unanswered) {
            let mut status = 503;
            let mut pet = Value::Null;
            assert!(
                eventually(Duration::from_secs(10), || {
                    (status, pet) = send(
                        &format!("{base}/pets"),
                        key,
                        Some(&body),
                        Some(&idempotency),
                    );
                    status != 503
                }),
                "{what}: a retry still unavailable after the failover"
            );
            if status == 201 || status == 200 {
                let kept = self.keyed.get_mut(&idempotency).expect("a key sent");
                kept.1 = Some(pet["id"].as_i64().expect("id"));
            } else {
                assert_eq!(status, 409, "{pet}");
            }
        }

        let db = RawPostgres::connect(leader).expect("the server taking writes");
        let stored: HashMap<i64, String> = db
            .query("SELECT id, name FROM pets")
            .expect("pets")
            .into_iter()
            .map(|row| (number(&row[0]), row[1].clone().expect("name")))
            .collect();
        let lost: Vec<_> = self
            .pets
            .iter()
            .filter(|(id, name)| stored.get(id) != Some(name))
            .collect();
        assert!(
            lost.is_empty(),
            "{what}: {} of {} pets answered 201 are not on the new primary, among them {:?}",
            lost.len(),
            self.pets.len(),
            &lost[..lost.len().min(5)]
        );
        let orders: HashMap<i64, i64> = db
            .query("SELECT id, pet_id FROM orders")
            .expect("orders")
            .into_iter()
            .map(|row| (number(&row[0]), number(&row[1])))
            .collect();
        let lost: Vec<_> = self
            .orders
            .iter()
            .filter(|(id, pet)| orders.get(id) != Some(pet))
            .collect();
        assert!(
            lost.is_empty(),
            "{what}: {} orders answered 201 are not on the new primary, among them {:?}",
            lost.len(),
            &lost[..lost.len().min(5)]
        );
        for (idempotency, (name, answered)) in &self.keyed {
            let made: Vec<i64> = stored
                .iter()
                .filter(|(_, stored)| *stored == name)
                .map(|(id, _)| *id)
                .collect();
            match answered {
                Some(id) => assert_eq!(made, vec![*id], "{idempotency}"),
                None => assert!(made.len() <= 1, "{idempotency} made {made:?}"),
            }
        }
        assert!(
            self.unseen.is_empty(),
            "{what}: {} of {} pets read back on the other instance were not found (pet, \
             instance, when): {:?}",
            self.unseen.len(),
            self.read_back + self.unseen.len(),
            &self.unseen[..self.unseen.len().min(5)]
        );
    }
}
